#!/bin/sh
# Flash and RAM of a microcontroller image against the board's budget, from `size` (Berkeley):
# flash = text + data (code, read-only data with the model array, vectors, initial values of .data),
# RAM = data + bss (.bss holds the engine's arena; the stack section is counted in bss).
# usage: mcu_size.sh SIZE_PROGRAM ELF FLASH_BYTES RAM_BYTES MODEL_H
set -eu
[ $# -eq 5 ] || { echo "usage: mcu_size.sh SIZE ELF FLASH_BYTES RAM_BYTES MODEL_H" >&2; exit 2; }
size=$1 elf=$2 flash_max=$3 ram_max=$4 model_h=$5
"$size" "$elf"
set -- $("$size" "$elf" | tail -1)
text=$1 data=$2 bss=$3
flash=$((text + data))
ram=$((data + bss))
model=$(sed -n 's/^#define MODEL_DATA_SIZE \([0-9]*\)u*$/\1/p' "$model_h")
arena=$(sed -n 's/^#define MODEL_ARENA_SIZE \([0-9]*\)u*$/\1/p' "$model_h")
stack=$("$size" -A "$elf" | awk '$1 == ".stack" { print $2 }')
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }
echo "$(basename "$elf"): text $text, data $data, bss $bss bytes"
echo "  flash $flash of $flash_max bytes ($(pct "$flash" "$flash_max") %): model array $model, code and other data $((flash - model))"
echo "  RAM   $ram of $ram_max bytes ($(pct "$ram" "$ram_max") %): arena $arena, stack ${stack:-0}, other $((ram - arena - ${stack:-0}))"
if [ "$flash" -gt "$flash_max" ] || [ "$ram" -gt "$ram_max" ]; then
    echo "  does NOT fit the board" >&2
    exit 1
fi
echo "  fits"

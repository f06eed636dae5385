# Cortex-M7 microcontroller boards with 2 MiB flash and 512 KiB RAM (STM32F767ZI / Nucleo-F767ZI
# layout: flash at 0x08000000, DTCM + SRAM1 + SRAM2 contiguous at 0x20000000), bare metal.
BOARD_DESC     := cortex-m7: Cortex-M7 with FPv5 double-precision FPU, 2 MiB flash, 512 KiB RAM, no OS
BOARD_KIND     := mcu
CROSS          := arm-none-eabi-
DEB_ARCH       :=
BOARD_CFLAGS   := -mcpu=cortex-m7 -mthumb -mfpu=fpv5-d16 -mfloat-abi=hard
# Flash is precious here and the kernels are the same C: -O2 instead of the Linux boards' -O3.
ENGINE_OPT     := -O2
# newlib (arm-none-eabi) defines uint32_t as unsigned long, 32 bits like unsigned int, so the engine's
# message formatter, which reads %u as unsigned int, gets what it expects, but -Wformat flags every
# uint32_t argument; and the bare-metal ABI's short enums make `act >= 0` checks always true. Both
# are silenced for this board only: the same calls are format-checked on every Linux board.
MCU_ENGINE_WARN := -Wno-format -Wno-type-limits
# What it builds: the engine (runtime/engine, freestanding: only memcpy/memmove/memset/memcmp and expf
# from newlib), boards/cortex-m7/main.c (loads model_data, prepares the engine on a static arena of
# MODEL_ARENA_SIZE bytes, runs once), startup code and linker script, into build/cortex-m7/manta-cortex-m7.elf,
# and prints text/data/bss with flash and RAM against the board's budget; the link fails when the
# image does not fit (the linker script's MEMORY regions).
BOARD_PROGRAMS := engine firmware
MCU_SRC        := boards/cortex-m7/main.c boards/cortex-m7/startup.c
MCU_LDSCRIPT   := boards/cortex-m7/stm32f767.ld
MCU_LDINCLUDE  := boards/cortex-m7/sections.ld
# The same image runs in QEMU's mps2-an500 machine (ARM's Cortex-M7 FPGA image; the FPU, the DSP
# instructions), linked at its addresses: make BOARD=cortex-m7 board-run prints its result line.
MCU_QEMU_LDSCRIPT := boards/cortex-m7/mps2_an500.ld
MCU_QEMU       := qemu-system-arm -M mps2-an500 -cpu cortex-m7 -nographic -monitor none \
                  -semihosting-config enable=on,target=native -kernel
MCU_LDFLAGS    := -nostartfiles --specs=nano.specs
MCU_FLASH_BYTES := 2097152
MCU_RAM_BYTES  := 524288
# The model comes from the host programs (manta train --schedule smoke, manta export --c-array).
BOARD_NEEDS_HOST := 1
BOARD_DEB_PKGS := gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
BOARD_RUN      :=
# Tests it cannot run: the engine's unit tests (no OS, no qemu-user for bare metal; they run on the
# Linux boards). What is checked here (tools/boards/test_boards.sh): the float32 and int8 images link
# within 2 MiB flash / 512 KiB RAM and, in QEMU's mps2-an500, give the host's output.
BOARD_NO_TESTS := the engine's unit tests (bare metal); checked: the images link, fit, and run in QEMU

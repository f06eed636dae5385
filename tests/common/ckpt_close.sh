# Sourced by integration scripts (run from the repository root) that compare checkpoints;
# needs $M (the manta program), $dir (a scratch folder) and fail().
# close A B SECTION LIMIT: the relative L2 difference of SECTION between checkpoints A and B
# (manta ckpt-diff) is at most LIMIT.
close() {
    "$M" ckpt-diff "$1" "$2" --json >"$dir/diff.json"
    rel=$(sed -n "s/.*\"name\":\"$3\",[^}]*\"l2_rel\":\([0-9.e+-]*\).*/\1/p" "$dir/diff.json")
    [ -n "$rel" ] || { cat "$dir/diff.json"; fail "no section $3"; }
    echo "$3: |a-b|/|a| = $rel (limit $4)"
    awk -v r="$rel" -v t="$4" 'BEGIN { exit !(r <= t) }'
}

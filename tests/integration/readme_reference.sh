# The README's configuration reference is the one the binaries print.
source "$(dirname "$0")/lib.sh" "$@"

sed -n '/<!-- config-reference:begin -->/,/<!-- config-reference:end -->/p' \
	"$SRC/README.md" | sed '1d;$d' >"$WORK/readme.md"
"$BUILD/ps-scheduler" --help-config >"$WORK/binary.md" || fail "--help-config failed"
[ -s "$WORK/readme.md" ] || fail "README has no config-reference section"
diff -u "$WORK/binary.md" "$WORK/readme.md" >"$WORK/diff.log" ||
	fail "README config reference is stale: regenerate it with ps-scheduler --help-config"
pass "README reference matches ($(wc -l <"$WORK/binary.md") lines)"

package tools

import (
	"fmt"
	"unicode/utf8"
)

// Evict returns s unchanged when it has at most max characters, otherwise
// its first and last keep characters around a note of how many were cut.
// It lives with the tools because every producer of tool output caps it
// this way: the eviction hook, MCP tools and background tasks.
func Evict(s string, max, keep int) string {
	return EvictWithNote(s, max, keep, "truncated %d characters")
}

// EvictWithNote is Evict with its own note; note formats the number of
// characters cut.
func EvictWithNote(s string, max, keep int, note string) string {
	if len(s) <= max { // bytes ≥ runes, so this is exact for short strings
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= max || n <= 2*keep {
		return s
	}
	r := []rune(s)
	return string(r[:keep]) + "\n\n... (" + fmt.Sprintf(note, n-2*keep) + ") ...\n\n" + string(r[n-keep:])
}

// Package quote shortens the text that crl's error messages quote.
package quote

import "unicode/utf8"

// Abbreviate returns s cut after n bytes, on a character boundary, with
// "…" after it; s itself when it is no longer than n. Messages quote the
// start of a long value so that the offending part is found, not the
// whole of it.
func Abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

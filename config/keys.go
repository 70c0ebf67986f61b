package config

import (
	"strconv"
	"strings"

	"github.com/crl-go/crl/internal/text/editdist"
)

// Keys returns the names of every setting that the DSN and the properties
// file accept (retryProperties only in the DSN), as the JDBC driver spells
// them; they are matched case-insensitively.
func Keys() []string {
	return keyNames(func(s *setting) bool { return !s.code })
}

// keyNames returns the keys of the settings that keep says.
func keyNames(keep func(*setting) bool) []string {
	var out []string
	for i := range settings {
		if keep(&settings[i]) {
			out = append(out, settings[i].key)
		}
	}
	return out
}

// EnvProperties is the environment variable that names the properties file.
const EnvProperties = "CRL_PROPERTIES"

// DefaultPropertiesFile is the file name looked for in the working
// directory and next to the executable.
const DefaultPropertiesFile = "mssql-jdbc.properties"

// lookupKey finds the setting of a key by name, case-insensitively,
// ignoring surrounding white space. It does not allocate.
func lookupKey(name string) (int, bool) {
	name = strings.TrimSpace(name)
	for i := range settings {
		if !settings[i].code && strings.EqualFold(name, settings[i].key) {
			return i, true
		}
	}
	return 0, false
}

// maxKeyDistance is the largest edit distance at which a key that is not
// ours is taken for a misspelling of one of ours. Every key of ours is at
// least nine letters long, and no key of go-mssqldb, go-sql-driver/mysql or
// pgx is this close to one (loginTimeout and pgx's lock_timeout, the
// closest pair, are three edits apart).
const maxKeyDistance = 2

// nearKey returns the key of ours that name probably misspells or
// imitates: the one within maxKeyDistance edits (insertions, deletions,
// substitutions and swaps of two neighbours) of name as it reads
// (foldKey: case-insensitive, invisible characters removed, look-alike
// letters folded), counted in characters. A name that is one of ours
// exactly is not a near miss; one that only looks like one of ours
// (rеtrуExec, retry\u200bExec) is, at distance 0. It is the one check
// behind the DSN readers and the properties file.
func nearKey(name string) (int, bool) {
	name = strings.TrimSpace(name)
	if _, ok := lookupKey(name); ok || name == "" {
		return 0, false
	}
	folded := foldKey(name)
	best, bestDist := 0, maxKeyDistance+1
	for i := range settings {
		if settings[i].code {
			continue
		}
		if d := editdist.Distance(folded, []rune(strings.ToLower(settings[i].key)), bestDist); d < bestDist {
			best, bestDist = i, d
		}
	}
	return best, bestDist <= maxKeyDistance
}

// nearKeyError reports a DSN key that misspells or imitates one of
// ours: the driver would ignore it (go-mssqldb) or send it to the
// server, and the setting would silently not apply. A name with
// characters that are not ASCII is quoted with them escaped, and they are
// listed: the eye cannot tell rеtrуExec from retryExec.
func nearKeyError(name string, i int) error {
	name = strings.TrimSpace(name)
	if odd := notASCII(name); odd != "" {
		return &dsnError{err: ErrUnknownKey, reason: strconv.QuoteToASCII(name) + " is not a setting: it looks like " + settings[i].key +
			" but holds characters that are not ASCII (" + odd + "); type the key in plain ASCII (the driver would ignore the look-alike)"}
	}
	return &dsnError{err: ErrUnknownKey, reason: strconv.Quote(name) +
		" is not a setting; did you mean " + settings[i].key + "? (keys are case-insensitive; the driver would ignore the misspelt one)"}
}

package config

import (
	"errors"
	"fmt"
	"github.com/crl-go/crl/internal/tables/family"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseProperties reads the text of a properties file; name is used in
// errors only. The format is that of mssql-jdbc.properties (Java
// properties): one key=value per line (key: value and key value work too),
// lines starting with # or ! are comments, a line ending in \ continues on
// the next. Keys are those of the DSN, case-insensitively, except
// retryProperties. retryExec and retryConn lines add up, as if joined by
// ';'; any other key given twice is an error. An unknown key, a malformed
// rule or a value out of range is a *FileError naming the line.
func ParseProperties(name string, data []byte) (Config, error) {
	var (
		c         Config
		firstLine = map[int]int{}      // setting → the line that first set it
		addsUp    = map[int][]string{} // setting → the values of its lines, when they add up
	)
	text := strings.TrimPrefix(string(data), "\uFEFF")
	err := eachProperty(name, text, func(lineNo int, line string) error {
		i, value, err := propertyLine(line)
		if err != nil {
			return err
		}
		s := &settings[i]
		if first, seen := firstLine[i]; seen && !s.addsUp {
			return fmt.Errorf("%w: %s is set again (first on line %d); only retryExec and retryConn lines add up",
				ErrDuplicateKey, s.key, first)
		} else if !seen {
			firstLine[i] = lineNo
		}
		if err := c.setValue(i, value, ""); err != nil {
			return err
		}
		if s.addsUp {
			addsUp[i] = append(addsUp[i], value)
		}
		return nil
	})
	if err != nil {
		return Config{}, err
	}
	for i, values := range addsUp {
		if len(values) == 1 {
			continue // set, and compiled, by its line
		}
		if err := c.setValue(i, joinRules(values), ""); err != nil {
			return Config{}, &FileError{Path: name, Err: err}
		}
	}
	return c, nil
}

// eachProperty calls f with every logical line of a properties file (its
// continuation lines joined, comments and blank lines left out) and the
// number of the line where it starts. An error of f is returned as a
// *FileError naming that line.
func eachProperty(name, text string, f func(lineNo int, line string) error) error {
	lines := strings.Split(text, "\n")
	for n := 0; n < len(lines); n++ {
		lineNo := n + 1
		line := strings.TrimLeft(strings.TrimSuffix(lines[n], "\r"), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) && n+1 < len(lines) {
			n++
			line = line[:len(line)-1] + strings.TrimLeft(strings.TrimSuffix(lines[n], "\r"), " \t\f")
		}
		if continues(line) {
			line = line[:len(line)-1]
		}
		if err := f(lineNo, line); err != nil {
			return &FileError{Path: name, Line: lineNo, Err: err}
		}
	}
	return nil
}

// propertyLine reads the key and the value of a logical line, and returns
// the key's setting, which must be one that the file accepts.
func propertyLine(line string) (int, string, error) {
	rawKey, rawValue := splitProperty(line)
	keyName, value := unescapeProperty(rawKey), strings.TrimSpace(unescapeProperty(rawValue))
	if !utf8.ValidString(keyName) || !utf8.ValidString(value) {
		return 0, "", fmt.Errorf("%w: the line is not valid UTF-8", ErrMalformed)
	}
	i, ok := lookupKey(keyName)
	if ok && settings[i].inFile {
		return i, value, nil
	}
	reason := "expected one of " + strings.Join(keyNames(func(s *setting) bool { return s.inFile }), ", ")
	if near, isNear := nearKey(keyName); isNear && settings[near].inFile {
		reason = "did you mean " + settings[near].key + "? (keys are case-insensitive) " + reason
	}
	if ok {
		reason = "a properties file cannot name another; set retryProperties in code, in the DSN or in " + EnvProperties
	}
	return 0, "", fmt.Errorf("%w %s: %s", ErrUnknownKey, strconv.Quote(keyName), reason)
}

// joinRules joins the values of several lines of one key with ';'.
func joinRules(values []string) string {
	parts := values[:0:0]
	for _, v := range values {
		if v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, ";")
}

// continues reports whether a line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line into its key and value, as Java
// does: the key ends at the first unescaped '=', ':' or white space; then
// white space, at most one '=' or ':', and white space are skipped.
func splitProperty(line string) (string, string) {
	i := 0
	for ; i < len(line) && !strings.ContainsRune("=: \t\f", rune(line[i])); i++ {
		if line[i] == '\\' {
			i++ // the escaped character is part of the key
		}
	}
	i = min(i, len(line)) // a final lone backslash
	j := skipBlank(line, i)
	if j < len(line) && (line[j] == '=' || line[j] == ':') {
		j++
	}
	return line[:i], line[skipBlank(line, j):]
}

// skipBlank returns the index of the first byte from i on that is not
// white space as Java properties know it (space, tab, form feed).
func skipBlank(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f') {
		i++
	}
	return i
}

// unescapeProperty resolves Java's escapes: \t \n \r \f, \uXXXX, and \c
// for any other c.
func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// ReadProperties reads and parses a properties file.
func ReadProperties(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, &FileError{Path: path, Err: err}
	}
	return ParseProperties(path, data)
}

// findProperties returns the absolute path of the properties file to use:
// the given one, else $CRL_PROPERTIES, else (for a SQL Server handle only:
// the file is the JDBC driver's, and must not change the rules of a MySQL
// or PostgreSQL handle that happens to run in the same directory)
// mssql-jdbc.properties in the working directory, else next to the
// executable, else "" (no file). A file given or named by the environment
// must exist.
func findProperties(given, driverName string) (string, error) {
	explicit, src := given, "given in code or in the DSN"
	if explicit == "" {
		explicit, src = os.Getenv(EnvProperties), "named by "+EnvProperties
	}
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return "", &FileError{Path: explicit, Err: err}
		}
		if _, err := os.Stat(abs); err != nil {
			return "", &FileError{Path: abs, Err: fmt.Errorf("the properties file %s cannot be read: %w", src, err)}
		}
		return abs, nil
	}
	if !family.Of(driverName).Profile().PropertiesFile {
		return "", nil
	}
	candidates := []string{DefaultPropertiesFile}
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(exe), DefaultPropertiesFile))
	}
	for _, c := range candidates {
		abs, err := filepath.Abs(c)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
			return abs, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", &FileError{Path: abs, Err: err}
		}
	}
	return "", nil
}

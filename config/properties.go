package config

import (
	"bytes"
	"errors"
	"fmt"
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
		exec      []string
		conn      []string
		firstLine = map[field]int{}
	)
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	lines := strings.Split(string(data), "\n")
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
		fail := func(err error) (Config, error) {
			return Config{}, &FileError{Path: name, Line: lineNo, Err: err}
		}
		rawKey, rawValue := splitProperty(line)
		keyName, value := unescapeProperty(rawKey), strings.TrimSpace(unescapeProperty(rawValue))
		if !utf8.ValidString(keyName) || !utf8.ValidString(value) {
			return fail(fmt.Errorf("%w: the line is not valid UTF-8", ErrMalformed))
		}
		k, ok := lookupKey(keyName)
		if !ok || !k.inFile {
			reason := "expected one of " + strings.Join(fileKeys(), ", ")
			if nk, near := nearKey(keyName); near && nk.inFile {
				reason = "did you mean " + nk.name + "? (keys are case-insensitive) " + reason
			}
			if ok {
				reason = "a properties file cannot name another; set retryProperties in code, in the DSN or in " + EnvProperties
			}
			return fail(fmt.Errorf("%w %s: %s", ErrUnknownKey, strconv.Quote(keyName), reason))
		}
		if first, seen := firstLine[k.field]; seen && k.field != fieldRetryExec && k.field != fieldRetryConn {
			return fail(fmt.Errorf("%w: %s is set again (first on line %d); only retryExec and retryConn lines add up",
				ErrDuplicateKey, k.name, first))
		}
		firstLine[k.field] = lineNo
		if err := c.setValue(k, value, ""); err != nil {
			return fail(err)
		}
		switch k.field {
		case fieldRetryExec:
			exec = append(exec, value)
		case fieldRetryConn:
			conn = append(conn, value)
		}
	}
	c.RetryExec = joinRules(exec)
	c.RetryConn = joinRules(conn)
	return c, nil
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
	for ; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
	}
	if i > len(line) {
		i = len(line)
	}
	k := line[:i]
	j := i
	for j < len(line) && (line[j] == ' ' || line[j] == '\t' || line[j] == '\f') {
		j++
	}
	if j < len(line) && (line[j] == '=' || line[j] == ':') {
		j++
	}
	for j < len(line) && (line[j] == ' ' || line[j] == '\t' || line[j] == '\f') {
		j++
	}
	return k, line[j:]
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

// fileKeys returns the keys that a properties file accepts.
func fileKeys() []string {
	var out []string
	for _, k := range keys {
		if k.inFile {
			out = append(out, k.name)
		}
	}
	return out
}

// ReadProperties reads and parses a properties file.
func ReadProperties(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, &FileError{Path: path, Err: err}
	}
	return ParseProperties(path, data)
}

// propertiesSource says where the path of the properties file came from.
type propertiesSource string

const (
	sourceNone    propertiesSource = ""
	sourceGiven   propertiesSource = "given in code or in the DSN"
	sourceEnv     propertiesSource = "named by " + EnvProperties
	sourceDefault propertiesSource = "found"
)

// findProperties returns the absolute path of the properties file to use:
// the given one, else $CRL_PROPERTIES, else (for a SQL Server handle only:
// the file is the JDBC driver's, and must not change the rules of a MySQL
// or PostgreSQL handle that happens to run in the same directory)
// mssql-jdbc.properties in the working directory, else next to the
// executable, else "" (no file). A file given or named by the environment
// must exist.
func findProperties(given, driverName string) (string, propertiesSource, error) {
	explicit, src := given, sourceGiven
	if explicit == "" {
		explicit, src = os.Getenv(EnvProperties), sourceEnv
	}
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return "", sourceNone, &FileError{Path: explicit, Err: err}
		}
		if _, err := os.Stat(abs); err != nil {
			return "", sourceNone, &FileError{Path: abs, Err: fmt.Errorf("the properties file %s cannot be read: %w", src, err)}
		}
		return abs, src, nil
	}
	if !isSQLServerDriver(driverName) {
		return "", sourceNone, nil
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
			return abs, sourceDefault, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", sourceNone, &FileError{Path: abs, Err: err}
		}
	}
	return "", sourceNone, nil
}

// isSQLServerDriver reports a go-mssqldb driver name.
func isSQLServerDriver(driverName string) bool {
	switch strings.ToLower(driverName) {
	case "sqlserver", "mssql", "azuresql":
		return true
	}
	return false
}

package config

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/crl-go/crl/internal/family"
	"github.com/crl-go/crl/internal/redact"
)

// ParseDSN reads the retry settings of a DSN and returns them, with the
// DSN for the driver: the same text with those settings removed (the
// driver's own keys are left byte for byte as written). driverName says
// how to read dsn (its family, by internal/family's table,
// case-insensitively):
//
//   - "sqlserver", "mssql", "azuresql" (go-mssqldb): the URL form
//     sqlserver://…?retryExec=…, the ADO form server=…;retryExec={…}, and
//     the odbc: form;
//   - "mysql" (go-sql-driver/mysql): user:pass@tcp(host)/db?retryExec=…;
//   - "pgx", "pgx/v5", "postgres", "postgresql" (pgx, lib/pq): the URL forms
//     postgres:// and postgresql://, and the key=value form host=… retryExec=….
//
// For any other driver the DSN is returned unchanged, or an error if it
// seems to carry a retry setting, which this package cannot remove safely.
//
// Keys are matched case-insensitively. In the ADO and key=value forms a
// value that holds ';' (or a space) is wrapped in braces:
// retryExec={1205:3;1222:2,1}. In the URL and MySQL forms values are
// percent-decoded, but a literal '+' stays '+' (it is not a space, unlike
// url.ParseQuery), so retryConn=+4060 and retryConn=%2B4060 are the same.
// A key given twice is an error, and so is a malformed or out-of-range
// value; errors name the key and the value.
func ParseDSN(driverName, dsn string) (Config, string, error) {
	var (
		params []param
		out    string
		err    error
	)
	switch family.Of(driverName) {
	case family.SQLServer:
		switch {
		case strings.HasPrefix(dsn, "sqlserver://"):
			params, out, err = stripURLQuery(dsn)
		case strings.HasPrefix(dsn, "odbc:"):
			params, out, err = stripADO(dsn[len("odbc:"):], true)
			out = "odbc:" + out
		default:
			params, out, err = stripADO(dsn, false)
		}
	case family.MySQL:
		params, out, err = stripMySQL(dsn)
	case family.Postgres:
		if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
			params, out, err = stripURLQuery(dsn)
		} else {
			params, out, err = stripKeywordValue(dsn)
		}
	default:
		if k, ok := mentionsKey(dsn); ok {
			return Config{}, "", &dsnError{reason: "driver " + strconv.Quote(driverName) +
				" is not one whose DSN this package can read, and the DSN seems to set " + k +
				"; for a wrapped driver, name its family with config.WithDriverFamily(\"sqlserver\"|\"mysql\"|\"postgres\"), or set it in code (config.With…) or in the properties file"}
		}
		return Config{}, dsn, nil
	}
	if err != nil {
		return Config{}, "", err
	}
	if len(params) == 0 {
		out = dsn // nothing of ours: the driver gets the DSN byte for byte
	}
	var c Config
	for _, p := range params {
		if c.set&(1<<p.setting) != 0 {
			return Config{}, "", &dsnError{reason: settings[p.setting].key + " given twice (keys are case-insensitive)", err: ErrDuplicateKey}
		}
		if err := c.setValue(p.setting, p.value, "DSN"); err != nil {
			return Config{}, "", err
		}
	}
	return c, out, nil
}

// param is one retry setting found in a DSN.
type param struct {
	setting int // index in settings
	value   string
}

// stripADO reads an ADO connection string (odbc: the ODBC form, without its
// prefix). The driver's parts are split exactly as go-mssqldb splits them
// (a double quote toggles quoting; in the ODBC form a value in braces runs
// to its closing brace, }} escaping one) and kept as written. Our values
// may be wrapped in braces (balanced, so {{1205:3};{1222:2}} works) or in
// double quotes ("" escaping one).
func stripADO(s string, odbc bool) ([]param, string, error) {
	params, _, out, err := readADO(s, odbc)
	return params, out, err
}

// driverParam is one key=value part of an ADO or ODBC connection string
// that is the driver's: its key lower-cased and trimmed, and its value as
// go-mssqldb reads it (see adoDriverValue).
type driverParam struct{ key, value string }

// readADO is stripADO that also returns the driver's parts, in order, so
// that what config reads of the driver's settings (the server, for the
// Azure default) is split as the driver splits it, by this one reader.
func readADO(s string, odbc bool) ([]param, []driverParam, string, error) {
	var (
		params   []param
		driver   []driverParam
		kept     []string
		afterOur string // the key of the last part that was not blank, when it was ours
		bareOur  bool   // and its value was bare (cut at the first ';')
	)
	i := 0
	for i < len(s) {
		start := i
		inQuote := false
		for i < len(s) {
			ch := s[i]
			if !odbc && ch == '"' {
				inQuote = !inQuote
			} else if !inQuote && (ch == '=' || ch == ';') {
				break
			}
			i++
		}
		if i >= len(s) || s[i] == ';' { // a part without '='
			part := s[start:i]
			if t := strings.TrimSpace(part); t != "" {
				// A part without a key right after one of ours (blank parts
				// between do not count) is the rest of our value: the driver
				// would ignore it, and the rule in it would be lost.
				switch {
				case afterOur != "" && bareOur:
					return nil, nil, "", &dsnError{err: ErrMalformed, reason: afterOur + ": the value is cut at ';' before " +
						strconv.Quote(t) + ", expected a value that holds ';' wrapped in braces, such as " + afterOur + "={1205:3;1222:2}"}
				case afterOur != "":
					return nil, nil, "", &dsnError{err: ErrMalformed, reason: afterOur + ": " + strconv.Quote(t) +
						" follows its value after ';' and has no key, expected every rule inside one pair of braces, such as " +
						afterOur + "={1205:3;1222:2}"}
				case strings.HasPrefix(t, "{"):
					return nil, nil, "", &dsnError{err: ErrMalformed, reason: strconv.Quote(t) +
						" has no key, expected a whole rule list in one pair of braces, such as retryExec={1205:3;1222:2}"}
				}
				afterOur = ""
			}
			kept = append(kept, part)
			i++
			continue
		}
		k, ours := lookupKey(s[start:i])
		if nk, near := nearKey(s[start:i]); near {
			return nil, nil, "", nearKeyError(s[start:i], nk)
		}
		key := s[start:i]
		i++ // the '='
		afterOur = ""
		if !ours {
			valueStart := i
			i = driverValueEnd(s, i, odbc, inQuote)
			kept = append(kept, s[start:i])
			driver = append(driver, driverParam{strings.ToLower(strings.TrimSpace(key)), adoDriverValue(s[valueStart:i], odbc)})
			i++
			continue
		}
		v, end, bare, err := ourADOValue(s, i, settings[k].key)
		if err != nil {
			return nil, nil, "", err
		}
		afterOur, bareOur = settings[k].key, bare
		params = append(params, param{k, v})
		i = end + 1
	}
	return params, driver, strings.Join(kept, ";"), nil
}

// adoDriverValue returns a driver's value as written (after its '=') as
// go-mssqldb reads it: in the ADO form trimmed, and without surrounding
// double quotes ("" escaping one); in the ODBC form, a value in braces
// without them (}} escaping one), else trimmed.
func adoDriverValue(v string, odbc bool) string {
	v = strings.TrimSpace(v)
	if !odbc {
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			return strings.ReplaceAll(v[1:len(v)-1], `""`, `"`)
		}
		return v
	}
	if len(v) == 0 || v[0] != '{' {
		return v
	}
	var b strings.Builder
	for j := 1; j < len(v); j++ {
		if v[j] == '}' {
			if j+1 < len(v) && v[j+1] == '}' {
				j++
			} else {
				break
			}
		}
		b.WriteByte(v[j])
	}
	return b.String()
}

// driverValueEnd returns the index of the ';' (or len) that ends the
// driver's value starting at i.
func driverValueEnd(s string, i int, odbc, inQuote bool) int {
	if odbc {
		j := skipSpace(s, i)
		if j < len(s) && s[j] == '{' {
			for j++; j < len(s); j++ {
				if s[j] == '}' {
					if j+1 < len(s) && s[j+1] == '}' {
						j++
						continue
					}
					break
				}
			}
			i = j
		}
		for i < len(s) && s[i] != ';' {
			i++
		}
		return i
	}
	for i < len(s) {
		if s[i] == '"' {
			inQuote = !inQuote
		} else if !inQuote && s[i] == ';' {
			break
		}
		i++
	}
	return i
}

// ourADOValue reads one of our values starting at i: {braced}, "quoted" or
// bare up to ';'. It returns the value, the index of the ';' (or len) after
// it, and whether it was bare.
func ourADOValue(s string, i int, name string) (string, int, bool, error) {
	j := skipSpace(s, i)
	var v string
	switch {
	case j < len(s) && s[j] == '{':
		end, ok := closingBrace(s, j)
		if !ok {
			return "", 0, false, &dsnError{err: ErrMalformed, reason: name + ": the brace opened at " +
				quotePiece(s[j:], redact.FormADO) + " is not closed, expected a value such as {1205:3;1222:2}"}
		}
		v, j = s[j+1:end], end+1
	case j < len(s) && s[j] == '"':
		var b strings.Builder
		for j++; ; j++ {
			if j >= len(s) {
				return "", 0, false, &dsnError{err: ErrMalformed, reason: name + ": the double quote is not closed"}
			}
			if s[j] == '"' {
				if j+1 < len(s) && s[j+1] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			b.WriteByte(s[j])
		}
		v, j = b.String(), j+1
	default:
		end := strings.IndexByte(s[i:], ';')
		if end < 0 {
			end = len(s)
		} else {
			end += i
		}
		return strings.TrimSpace(s[i:end]), end, true, nil
	}
	j = skipSpace(s, j)
	if j < len(s) && s[j] != ';' {
		return "", 0, false, &dsnError{err: ErrMalformed, reason: name + ": " + quotePiece(s[j:], redact.FormADO) +
			" follows the closing brace or quote, expected ';'"}
	}
	return v, j, false, nil
}

// closingBrace returns the index of the brace that closes the one at
// s[open], counting nested braces.
func closingBrace(s string, open int) (int, bool) {
	depth := 0
	for j := open; j < len(s); j++ {
		switch s[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j, true
			}
		}
	}
	return 0, false
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// quotePiece quotes the start of a piece of a DSN of form f for an
// error, its secrets hidden first: the piece runs to the DSN's end, and a
// password may follow the value at fault.
func quotePiece(s string, f redact.Form) string {
	s = redact.In(s, f)
	if len(s) > 20 {
		s = s[:20] + "…"
	}
	return strconv.Quote(s)
}

// stripURLQuery reads the query of a URL DSN (sqlserver://, postgres://,
// postgresql://): the text after the first '?' up to a '#', pairs split on
// '&' only (never ';', which rules use).
func stripURLQuery(s string) ([]param, string, error) {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return nil, s, nil
	}
	base, query, frag := s[:q], s[q+1:], ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	var (
		params []param
		kept   []string
	)
	for _, pair := range strings.Split(query, "&") {
		p, ours, err := ourQueryParam(pair)
		if err != nil {
			return nil, "", err
		}
		if ours {
			params = append(params, p)
		} else {
			kept = append(kept, pair)
		}
	}
	out := base
	if len(kept) > 0 {
		out += "?" + strings.Join(kept, "&")
	}
	return params, out + frag, nil
}

// ourQueryParam reads one key=value pair of a URL query, reporting whether
// the key is ours. Our values are percent-decoded as a path is, so a
// literal '+' stays '+'.
func ourQueryParam(pair string) (param, bool, error) {
	rawKey, rawValue, _ := strings.Cut(pair, "=")
	name, err := url.PathUnescape(rawKey)
	if err != nil {
		return param{}, false, nil // not ours; the driver judges it
	}
	k, ours := lookupKey(name)
	if nk, near := nearKey(name); near && strings.Contains(pair, "=") {
		return param{}, false, nearKeyError(name, nk)
	}
	if !ours {
		return param{}, false, nil
	}
	v, err := url.PathUnescape(rawValue)
	if err != nil {
		return param{}, false, &ValueError{Source: "DSN", Key: settings[k].key, Value: rawValue, Err: err,
			Reason: "not valid percent-encoding, expected %XX escapes such as %2B for '+'"}
	}
	return param{k, v}, true, nil
}

// stripMySQL reads a go-sql-driver/mysql DSN,
// [user[:password]@][net[(addr)]]/dbname[?param1=value1&paramN=valueN].
// Our parameters are found by name after a '?' or '&', so that their
// values may hold a '/' (a path), which the driver itself cannot parse.
func stripMySQL(s string) ([]param, string, error) {
	var params []param
	for pos := 0; pos < len(s); {
		i := strings.IndexAny(s[pos:], "?&")
		if i < 0 {
			break
		}
		i += pos
		end := strings.IndexByte(s[i+1:], '&')
		if end < 0 {
			end = len(s)
		} else {
			end += i + 1
		}
		p, ours, err := ourQueryParam(s[i+1 : end])
		if err != nil {
			return nil, "", err
		}
		if !ours || !strings.Contains(s[i+1:end], "=") {
			pos = i + 1
			continue
		}
		params = append(params, p)
		switch {
		case s[i] == '&':
			s = s[:i] + s[end:]
		case end < len(s): // '?' ours '&' rest: keep the '?'
			s = s[:i+1] + s[end+1:]
		default:
			s = s[:i]
		}
		pos = i
	}
	return params, s, nil
}

// stripKeywordValue reads a libpq key=value DSN, as pgx does: values may be
// 'quoted' with backslash escapes, or bare up to white space; our values
// may also be wrapped in braces. The driver's pairs are kept as written,
// joined by one space.
func stripKeywordValue(s string) ([]param, string, error) {
	var (
		params []param
		kept   []string
	)
	i := skipSpace(s, 0)
	for i < len(s) {
		start := i
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 { // malformed; the driver reports it
			kept = append(kept, s[i:])
			break
		}
		name := strings.TrimSpace(s[i : i+eq])
		k, ours := lookupKey(name)
		if strings.ContainsAny(name, " \t\r\n\v\f") {
			ours = false
		} else if nk, near := nearKey(name); near {
			return nil, "", nearKeyError(name, nk)
		}
		i = skipSpace(s, i+eq+1)
		v, end, closed := keywordValue(s, i, ours)
		if !closed && !ours { // malformed; the driver reports it
			kept = append(kept, s[start:])
			return params, strings.Join(kept, " "), nil
		}
		if !closed {
			what := "the quote is not closed"
			if s[i] == '{' {
				what = "the brace opened at " + quotePiece(s[i:], redact.FormKeyValue) + " is not closed"
			}
			return nil, "", &dsnError{err: ErrMalformed, reason: settings[k].key + ": " + what}
		}
		if ours {
			params = append(params, param{k, v})
		} else {
			kept = append(kept, s[start:end])
		}
		i = skipSpace(s, end)
	}
	return params, strings.Join(kept, " "), nil
}

// keywordValue reads the value of a key=value DSN starting at i:
// 'quoted' with backslash escapes, {braced} when braces is set (for our
// keys), or bare up to white space. It returns the value, the index after
// it, and false when a quote or a brace is not closed.
func keywordValue(s string, i int, braces bool) (string, int, bool) {
	switch {
	case i < len(s) && s[i] == '\'':
		var b strings.Builder
		j := i + 1
		for ; j < len(s) && s[j] != '\''; j++ {
			if s[j] == '\\' && j+1 < len(s) {
				j++
			}
			b.WriteByte(s[j])
		}
		return b.String(), j + 1, j < len(s)
	case braces && i < len(s) && s[i] == '{':
		c, ok := closingBrace(s, i)
		if !ok {
			return "", 0, false
		}
		return s[i+1 : c], c + 1, true
	}
	var b strings.Builder
	j := i
	for ; j < len(s) && !isSpace(s[j]); j++ {
		if s[j] == '\\' && j+1 < len(s) {
			j++
		}
		b.WriteByte(s[j])
	}
	return b.String(), j, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

// mentionsKey reports whether s seems to set one of our keys: the name,
// case-insensitively, followed by optional white space and '='.
func mentionsKey(s string) (string, bool) {
	lower := strings.ToLower(s)
	for _, key := range Keys() {
		name := strings.ToLower(key)
		for from := 0; ; {
			i := strings.Index(lower[from:], name)
			if i < 0 {
				break
			}
			j := skipSpace(lower, from+i+len(name))
			if j < len(lower) && lower[j] == '=' {
				return key, true
			}
			from += i + 1
		}
	}
	return "", false
}

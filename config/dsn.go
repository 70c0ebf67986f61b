package config

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/text/dsnlex"
	"github.com/crl-go/crl/internal/text/redact"
)

// ParseDSN reads the retry settings of a DSN and returns them, with the
// DSN for the driver: the same text with those settings removed (the
// driver's own keys are left byte for byte as written). driverName says
// how to read dsn (its family, by internal/tables/family's table,
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
	switch family.Of(driverName).Profile().DSN {
	case family.DSNURLOrADO:
		switch {
		case strings.HasPrefix(dsn, "sqlserver://"):
			params, out, err = stripURLQuery(dsn)
		case strings.HasPrefix(dsn, "odbc:"):
			params, out, err = stripADO(dsn[len("odbc:"):], true)
			out = "odbc:" + out
		default:
			params, out, err = stripADO(dsn, false)
		}
	case family.DSNMySQL:
		params, out, err = stripMySQL(dsn)
	case family.DSNURLOrKeyValue:
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
	r := adoReader{s: s, odbc: odbc}
	for i := 0; i < len(s); {
		var err error
		if i, err = r.part(i); err != nil {
			return nil, nil, "", err
		}
	}
	return r.params, r.driver, strings.Join(r.kept, ";"), nil
}

// adoReader is the state of readADO.
type adoReader struct {
	s        string
	odbc     bool
	params   []param
	driver   []driverParam
	kept     []string
	afterOur string // the key of the last part that was not blank, when it was ours
	bareOur  bool   // and its value was bare (cut at the first ';')
}

// part reads the part that starts at start and returns the index after
// the ';' that ends it.
func (r *adoReader) part(start int) (int, error) {
	s := r.s
	i, inQuote := dsnlex.ADOKeyEnd(s, start, r.odbc)
	if i >= len(s) || s[i] == ';' {
		return i + 1, r.keyless(s[start:i])
	}
	key := s[start:i]
	k, ours := lookupKey(key)
	if nk, near := nearKey(key); near {
		return 0, nearKeyError(key, nk)
	}
	r.afterOur = ""
	if !ours {
		end := dsnlex.ADODriverValueEnd(s, i+1, r.odbc, inQuote)
		r.kept = append(r.kept, s[start:end])
		r.driver = append(r.driver, driverParam{strings.ToLower(strings.TrimSpace(key)), dsnlex.ADODriverValue(s[i+1:end], r.odbc)})
		return end + 1, nil
	}
	name := settings[k].key
	v := dsnlex.ADOValue(s, i+1)
	switch v.Fault {
	case dsnlex.Unclosed:
		if s[v.At] == '"' {
			return 0, &dsnError{err: ErrMalformed, reason: name + ": the double quote is not closed"}
		}
		return 0, &dsnError{err: ErrMalformed, reason: name + ": the brace opened at " +
			quotePiece(s[v.At:], redact.FormADO) + " is not closed, expected a value such as {1205:3;1222:2}"}
	case dsnlex.Trailing:
		return 0, &dsnError{err: ErrMalformed, reason: name + ": " + quotePiece(s[v.At:], redact.FormADO) +
			" follows the closing brace or quote, expected ';'"}
	}
	r.afterOur, r.bareOur = name, v.Bare
	r.params = append(r.params, param{k, v.Text})
	return v.End + 1, nil
}

// keyless keeps a part without '='. A part without a key right after one
// of ours (blank parts between do not count) is the rest of our value:
// the driver would ignore it, and the rule in it would be lost.
func (r *adoReader) keyless(part string) error {
	r.kept = append(r.kept, part)
	t := strings.TrimSpace(part)
	if t == "" {
		return nil
	}
	switch {
	case r.afterOur != "" && r.bareOur:
		return &dsnError{err: ErrMalformed, reason: r.afterOur + ": the value is cut at ';' before " +
			strconv.Quote(t) + ", expected a value that holds ';' wrapped in braces, such as " + r.afterOur + "={1205:3;1222:2}"}
	case r.afterOur != "":
		return &dsnError{err: ErrMalformed, reason: r.afterOur + ": " + strconv.Quote(t) +
			" follows its value after ';' and has no key, expected every rule inside one pair of braces, such as " +
			r.afterOur + "={1205:3;1222:2}"}
	case strings.HasPrefix(t, "{"):
		return &dsnError{err: ErrMalformed, reason: strconv.Quote(t) +
			" has no key, expected a whole rule list in one pair of braces, such as retryExec={1205:3;1222:2}"}
	}
	r.afterOur = ""
	return nil
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
	base, query, frag, ok := dsnlex.Query(s)
	if !ok {
		return nil, s, nil
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
		i, end, ok := dsnlex.NextMySQLParam(s, pos)
		if !ok {
			break
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
	for i := dsnlex.SkipSpace(s, 0); i < len(s); {
		p, ok := dsnlex.NextPair(s, i, bracedKey)
		if !ok { // malformed; the driver reports it
			kept = append(kept, s[i:])
			break
		}
		k, ours := lookupKey(p.Key)
		if strings.ContainsAny(p.Key, spaces) {
			ours = false
		} else if nk, near := nearKey(p.Key); near {
			return nil, "", nearKeyError(p.Key, nk)
		}
		if p.Value.Fault != dsnlex.NoFault {
			if !ours { // malformed; the driver reports it
				kept = append(kept, s[p.Start:])
				return params, strings.Join(kept, " "), nil
			}
			what := "the quote is not closed"
			if s[p.Value.At] == '{' {
				what = "the brace opened at " + quotePiece(s[p.Value.At:], redact.FormKeyValue) + " is not closed"
			}
			return nil, "", &dsnError{err: ErrMalformed, reason: settings[k].key + ": " + what}
		}
		if ours {
			params = append(params, param{k, p.Value.Text})
		} else {
			kept = append(kept, s[p.Start:p.Value.End])
		}
		i = dsnlex.SkipSpace(s, p.Value.End)
	}
	return params, strings.Join(kept, " "), nil
}

// spaces are the white space bytes of a key=value DSN.
const spaces = " \t\r\n\v\f"

// bracedKey reports whether the value of key, in a key=value DSN, may be
// in braces: it is one of ours.
func bracedKey(key string) bool {
	_, ours := lookupKey(key)
	return ours && !strings.ContainsAny(key, spaces)
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
			j := dsnlex.SkipSpace(lower, from+i+len(name))
			if j < len(lower) && lower[j] == '=' {
				return key, true
			}
			from += i + 1
		}
	}
	return "", false
}

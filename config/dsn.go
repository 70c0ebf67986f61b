package config

import (
	"errors"
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
	d, err := readDSN(driverName, dsn)
	if err != nil {
		return Config{}, "", err
	}
	return d.config, d.driverDSN, nil
}

// dsnRead is what one reading of a DSN gives.
type dsnRead struct {
	config    Config
	driverDSN string // the DSN without crl's keys
	server    string // of a SQL Server DSN, the host it names (sqlServerHost), for the Azure default
}

// readDSN is ParseDSN. The lexer reads the DSN's text once, into pairs
// that each say where they stand; crl's are taken out of them, and the
// driver's DSN is the rest, as written.
func readDSN(driverName, dsn string) (dsnRead, error) {
	fam := family.Of(driverName)
	form, ok := dsnForm(fam, dsn)
	if !ok {
		if k, ok := mentionsKey(dsn); ok {
			return dsnRead{}, &dsnError{reason: "driver " + strconv.Quote(driverName) +
				" is not one whose DSN this package can read, and the DSN seems to set " + k +
				"; for a wrapped driver, name its family with config.WithDriverFamily(\"sqlserver\"|\"mysql\"|\"postgres\"), or set it in code (config.With…) or in the properties file"}
		}
		return dsnRead{driverDSN: dsn}, nil
	}
	pairs, lexErr := dsnlex.Pairs(dsn, form, isOurKey)
	r := dsnReader{s: dsn, form: form, ours: make([]bool, len(pairs))}
	for i := range pairs {
		if err := r.take(i, &pairs[i]); err != nil {
			return dsnRead{}, err
		}
	}
	if lexErr != nil {
		return dsnRead{}, malformedValue(dsn, form, lexErr)
	}
	c, err := r.config()
	if err != nil {
		return dsnRead{}, err
	}
	d := dsnRead{config: c, driverDSN: r.driverDSN(pairs)}
	if fam.Profile().AzureDefaults {
		d.server = sqlServerHost(form, pairs, d.driverDSN)
	}
	return d, nil
}

// dsnForm returns the form in which a DSN of family f is read: for SQL
// Server the URL sqlserver://, odbc: or ADO; for MySQL its own; for
// PostgreSQL the URL postgres:// or postgresql://, or key=value. It
// reports false for any other family, whose DSN this package does not
// read.
func dsnForm(f family.Family, dsn string) (dsnlex.Form, bool) {
	switch f.Profile().DSN {
	case family.DSNURLOrADO:
		switch {
		case strings.HasPrefix(dsn, "sqlserver://"):
			return dsnlex.FormURL, true
		case strings.HasPrefix(dsn, "odbc:"):
			return dsnlex.FormODBC, true
		}
		return dsnlex.FormADO, true
	case family.DSNMySQL:
		return dsnlex.FormMySQL, true
	case family.DSNURLOrKeyValue:
		if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
			return dsnlex.FormURL, true
		}
		return dsnlex.FormKeyValue, true
	}
	return 0, false
}

// isOurKey reports a key of ours, for the lexer: its value is read as
// crl's (see ParseDSN), not as the driver's.
func isOurKey(key string) bool {
	_, ok := lookupKey(key)
	return ok
}

// param is one retry setting found in a DSN.
type param struct {
	setting int // index in settings
	value   string
}

// dsnReader takes crl's settings out of the pairs of a DSN.
type dsnReader struct {
	s        string
	form     dsnlex.Form
	params   []param
	ours     []bool // by pair: it is ours, and left out of the driver's DSN
	afterOur string // ADO: the key of the last part that was not blank, when it was ours
	bareOur  bool   // and its value was bare (cut at the first ';')
}

// take reads pair i, p.
func (r *dsnReader) take(i int, p *dsnlex.Pair) error {
	switch r.form {
	case dsnlex.FormADO, dsnlex.FormODBC:
		return r.adoPart(i, p)
	case dsnlex.FormURL, dsnlex.FormMySQL:
		return r.queryPart(i, p)
	}
	return r.keywordPart(i, p)
}

// add notes the value of settings[k], the setting of pair i.
func (r *dsnReader) add(i, k int, value string) {
	r.params = append(r.params, param{k, value})
	r.ours[i] = true
}

// adoPart reads a part of an ADO or ODBC connection string. Our values
// may be wrapped in braces (balanced, so {{1205:3};{1222:2}} works) or in
// double quotes ("" escaping one); the lexer read them so.
func (r *dsnReader) adoPart(i int, p *dsnlex.Pair) error {
	if !p.Eq {
		return r.keyless(p.Key)
	}
	r.afterOur = ""
	k, ours := lookupKey(p.Key)
	if !ours {
		if nk, near := nearKey(p.Key); near {
			return nearKeyError(p.Key, nk)
		}
		return nil
	}
	r.afterOur, r.bareOur = settings[k].key, p.Bare
	r.add(i, k, p.Value)
	return nil
}

// keyless checks a part without '=', t (trimmed). A part without a key
// right after one of ours (blank parts between do not count) is the rest
// of our value: the driver would ignore it, and the rule in it would be
// lost.
func (r *dsnReader) keyless(t string) error {
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

// queryPart reads a pair of a URL query or a MySQL DSN's parameters. Our
// values are percent-decoded as a path is, so a literal '+' stays '+'. A
// MySQL parameter of ours without '=' is left to the driver.
func (r *dsnReader) queryPart(i int, p *dsnlex.Pair) error {
	name, err := url.PathUnescape(p.Key)
	if err != nil {
		return nil // not ours; the driver judges it
	}
	k, ours := lookupKey(name)
	if nk, near := nearKey(name); near && p.Eq {
		return nearKeyError(name, nk)
	}
	if !ours || r.form == dsnlex.FormMySQL && !p.Eq {
		return nil
	}
	v, err := url.PathUnescape(p.Value)
	if err != nil {
		return &ValueError{Source: "DSN", Key: settings[k].key, Value: p.Value, Err: err,
			Reason: "not valid percent-encoding, expected %XX escapes such as %2B for '+'"}
	}
	r.add(i, k, v)
	return nil
}

// keywordPart reads a pair of a libpq key=value DSN. A key with white
// space inside is text before a key, the driver's to judge.
func (r *dsnReader) keywordPart(i int, p *dsnlex.Pair) error {
	if !p.Eq || strings.ContainsAny(p.Key, spaces) {
		return nil
	}
	k, ours := lookupKey(p.Key)
	if !ours {
		if nk, near := nearKey(p.Key); near {
			return nearKeyError(p.Key, nk)
		}
		return nil
	}
	r.add(i, k, p.Value)
	return nil
}

// config sets the settings read, each at most once.
func (r *dsnReader) config() (Config, error) {
	var c Config
	for _, p := range r.params {
		if c.set&(1<<p.setting) != 0 {
			return Config{}, &dsnError{reason: settings[p.setting].key + " given twice (keys are case-insensitive)", err: ErrDuplicateKey}
		}
		if err := c.setValue(p.setting, p.value, "DSN"); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// driverDSN returns the DSN without our pairs, the driver's left byte for
// byte as written; with none of ours, the DSN itself. ADO and ODBC parts
// are joined by ';', key=value pairs by a space; a query keeps its '?'
// while it has a pair.
func (r *dsnReader) driverDSN(pairs []dsnlex.Pair) string {
	if len(r.params) == 0 {
		return r.s
	}
	switch r.form {
	case dsnlex.FormADO, dsnlex.FormODBC:
		return r.s[:pairs[0].Start] + r.kept(pairs, ";")
	case dsnlex.FormURL:
		out := r.s[:pairs[0].Start-1] // up to the '?'
		if r.keptAny() {
			out += "?" + r.kept(pairs, "&")
		}
		return out + r.s[pairs[len(pairs)-1].End:]
	case dsnlex.FormMySQL:
		return r.mysqlDSN(pairs)
	}
	return r.kept(pairs, " ")
}

// kept joins the text of the pairs that are not ours with sep.
func (r *dsnReader) kept(pairs []dsnlex.Pair, sep string) string {
	var b strings.Builder
	first := true
	for i, p := range pairs {
		if r.ours[i] {
			continue
		}
		if !first {
			b.WriteString(sep)
		}
		b.WriteString(r.s[p.Start:p.End])
		first = false
	}
	return b.String()
}

// keptAny reports a pair that is not ours.
func (r *dsnReader) keptAny() bool {
	for _, o := range r.ours {
		if !o {
			return true
		}
	}
	return false
}

// mysqlDSN returns a MySQL DSN without our parameters. A parameter goes
// with the separator before it, but where that is the '?' it goes with
// the one after it instead, and the next parameter kept takes the '?'.
func (r *dsnReader) mysqlDSN(pairs []dsnlex.Pair) string {
	var b strings.Builder
	b.WriteString(r.s[:pairs[0].Start-1])
	question := false // a '?' of a parameter left out waits for the next one kept
	for i, p := range pairs {
		sep := r.s[p.Start-1]
		if question {
			sep = '?'
		}
		question = r.ours[i] && sep == '?'
		if !r.ours[i] {
			b.WriteByte(sep)
			b.WriteString(r.s[p.Start:p.End])
		}
	}
	return b.String()
}

// malformedValue is the error of a value of ours that the lexer could not
// read.
func malformedValue(s string, form dsnlex.Form, err error) error {
	var e *dsnlex.Error
	if !errors.As(err, &e) {
		return &dsnError{err: ErrMalformed, reason: err.Error()}
	}
	k, _ := lookupKey(e.Key)
	name := settings[k].key
	switch {
	case !e.Unclosed:
		return &dsnError{err: ErrMalformed, reason: name + ": " + quotePiece(s[e.At:], form) +
			" follows the closing brace or quote, expected ';'"}
	case s[e.At] == '{':
		return &dsnError{err: ErrMalformed, reason: name + ": the brace opened at " +
			quotePiece(s[e.At:], form) + " is not closed, expected a value such as {1205:3;1222:2}"}
	case s[e.At] == '"':
		return &dsnError{err: ErrMalformed, reason: name + ": the double quote is not closed"}
	}
	return &dsnError{err: ErrMalformed, reason: name + ": the quote is not closed"}
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

// spaces are the white space bytes of a key=value DSN.
const spaces = " \t\r\n\v\f"

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
			if rest := strings.TrimLeft(lower[from+i+len(name):], spaces); strings.HasPrefix(rest, "=") {
				return key, true
			}
			from += i + 1
		}
	}
	return "", false
}

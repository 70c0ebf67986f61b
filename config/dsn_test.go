package config

import (
	"strings"
	"testing"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/microsoft/go-mssqldb/msdsn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDSN(t *testing.T) {
	tests := []struct {
		name   string
		driver string
		dsn    string
		want   Config // only the exported fields are compared
		out    string
	}{
		{
			name: "ADO braces hold ';'", driver: "sqlserver",
			dsn:  "server=h;retryExec={1205:3;1222:2,1};user id=sa",
			want: Config{RetryExec: "1205:3;1222:2,1"}, out: "server=h;user id=sa",
		},
		{
			name: "ADO nested braces", driver: "sqlserver",
			dsn:  "server=h;retryExec={{1205:3};{1222:2,1}}",
			want: Config{RetryExec: "{1205:3};{1222:2,1}"}, out: "server=h",
		},
		{
			name: "ADO keys are case-insensitive, white space around them ignored", driver: "mssql",
			dsn:  "Server=h; RETRYEXEC = {1205:3} ;RetryConn={+4060};Database=d",
			want: Config{RetryExec: "1205:3", RetryConn: "+4060"}, out: "Server=h;Database=d",
		},
		{
			name: "ADO double quotes", driver: "sqlserver",
			dsn:  `server=h;retryExec="{1205:3;1222:2}";password="a;b"`,
			want: Config{RetryExec: "{1205:3;1222:2}"}, out: `server=h;password="a;b"`,
		},
		{
			name: "ADO a driver value in quotes that mentions our key is the driver's", driver: "sqlserver",
			dsn:  `server=h;password="x;retryExec={1205:3}";retryConn={4060}`,
			want: Config{RetryConn: "4060"}, out: `server=h;password="x;retryExec={1205:3}"`,
		},
		{
			name: "ADO bare value", driver: "sqlserver",
			dsn:  "retryExec=1205:3;server=h;connectRetryCount=0",
			want: Config{RetryExec: "1205:3", ConnectRetryCount: core.Disabled}, out: "server=h",
		},
		{
			name: "ODBC form keeps its braces", driver: "sqlserver",
			dsn:  "odbc:server=h;password={a;b}}c};retryExec={1205:3};user id=sa",
			want: Config{RetryExec: "1205:3"}, out: "odbc:server=h;password={a;b}}c};user id=sa",
		},
		{
			name: "URL", driver: "sqlserver",
			dsn:  "sqlserver://sa:p%40ss@h:1433/inst?database=db&retryExec={1205:3;1222:2}&retryConn=+4060&encrypt=disable",
			want: Config{RetryExec: "{1205:3;1222:2}", RetryConn: "+4060"},
			out:  "sqlserver://sa:p%40ss@h:1433/inst?database=db&encrypt=disable",
		},
		{
			name: "URL percent-encoded values, %2B is '+'", driver: "sqlserver",
			dsn:  "sqlserver://h?retryConn=%2B4060&retryExec=%7B1205%3A3%2C1%2B1%7D&RetryJitter=full",
			want: Config{RetryConn: "+4060", RetryExec: "{1205:3,1+1}", Jitter: core.JitterFull},
			out:  "sqlserver://h",
		},
		{
			name: "URL fragment kept", driver: "azuresql",
			dsn:  "sqlserver://h?retryExec={1205:3}&database=d#frag",
			want: Config{RetryExec: "{1205:3}"}, out: "sqlserver://h?database=d#frag",
		},
		{
			name: "MySQL", driver: "mysql",
			dsn:  "user:pass@tcp(127.0.0.1:3306)/db?parseTime=true&retryExec={1213:3,100ms}&retryProperties=/etc/crl/my.properties&loc=UTC",
			want: Config{RetryExec: "{1213:3,100ms}", PropertiesPath: "/etc/crl/my.properties"},
			out:  "user:pass@tcp(127.0.0.1:3306)/db?parseTime=true&loc=UTC",
		},
		{
			name: "MySQL ours first", driver: "mysql",
			dsn:  "u@tcp(h)/db?retryExec={1213:3,1}&timeout=5s",
			want: Config{RetryExec: "{1213:3,1}"}, out: "u@tcp(h)/db?timeout=5s",
		},
		{
			name: "MySQL only ours, password with ? and &", driver: "mysql",
			dsn:  "u:p?a&s@tcp(h)/db?retryConn=+1040&retryBudget=off",
			want: Config{RetryConn: "+1040", NoBudget: true}, out: "u:p?a&s@tcp(h)/db",
		},
		{
			name: "PostgreSQL URL", driver: "pgx",
			dsn:  "postgres://u:p@h:5432/db?sslmode=disable&retryExec={40001,40P01:3,100ms}&queryTimeout=0",
			want: Config{RetryExec: "{40001,40P01:3,100ms}", QueryTimeout: core.JDBCQueryTimeoutZero},
			out:  "postgres://u:p@h:5432/db?sslmode=disable",
		},
		{
			name: "PostgreSQL postgresql URL", driver: "postgres",
			dsn:  "postgresql://h/db?retryExec={40001:2,1}",
			want: Config{RetryExec: "{40001:2,1}"}, out: "postgresql://h/db",
		},
		{
			name: "PostgreSQL key=value", driver: "pgx/v5",
			dsn:  "host=h user=u retryExec='{40001:3,1}' retryBudget={max=10, earn=0.5} dbname=d password='a b'",
			want: Config{RetryExec: "{40001:3,1}", Budget: core.BudgetSettings{Max: 10, EarnPerAttempt: 0.5}},
			out:  "host=h user=u dbname=d password='a b'",
		},
		{
			name: "no settings", driver: "sqlserver",
			dsn: "server=h;user id=sa", out: "server=h;user id=sa",
		},
		{
			name: "unknown driver without settings", driver: "sqlite3",
			dsn: "file:test.db?cache=shared", out: "file:test.db?cache=shared",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out, err := ParseDSN(tt.driver, tt.dsn)
			require.NoError(t, err, "ParseDSN")
			got.set, got.exec, got.conn = 0, nil, nil
			assert.Equal(t, tt.want, got, "settings")
			assert.Equal(t, tt.out, out, "driver DSN")
		})
	}
}

// TestParseDSNEveryKey sets each key in both forms and checks the field.
// isSet reports whether the setting of key is set in c.
func isSet(c Config, key string) bool {
	i, ok := lookupKey(key)
	return ok && c.has(i)
}

func TestParseDSNEveryKey(t *testing.T) {
	tests := []struct {
		key, value string
		check      func(Config) bool
	}{
		{"retryExec", "{1205:3,2*2:select}", func(c Config) bool { return c.RetryExec == "{1205:3,2*2:select}" }},
		{"retryConn", "{+4060,40613}", func(c Config) bool { return c.RetryConn == "{+4060,40613}" }},
		{"connectRetryCount", "5", func(c Config) bool { return c.ConnectRetryCount == 5 }},
		{"connectRetryCount", "0", func(c Config) bool { return c.ConnectRetryCount == core.Disabled }},
		{"connectRetryInterval", "15", func(c Config) bool { return c.ConnectRetryInterval == 15*time.Second }},
		{"connectRetryInterval", "1500ms", func(c Config) bool { return c.ConnectRetryInterval == 1500*time.Millisecond }},
		{"loginTimeout", "45", func(c Config) bool { return c.LoginTimeout == 45*time.Second }},
		{"loginTimeout", "0", func(c Config) bool { return c.LoginTimeout == 0 && isSet(c, keyLoginTimeout) }},
		{"queryTimeout", "-1", func(c Config) bool { return c.QueryTimeout == 0 && isSet(c, keyQueryTimeout) }},
		{"queryTimeout", "0", func(c Config) bool { return c.QueryTimeout == core.JDBCQueryTimeoutZero }},
		{"queryTimeout", "30", func(c Config) bool { return c.QueryTimeout == 30*time.Second }},
		{"queryTimeout", "2.5", func(c Config) bool { return c.QueryTimeout == 2500*time.Millisecond }},
		{"retryRefresh", "5", func(c Config) bool { return c.RetryRefresh == 5*time.Second }},
		{"retryRefresh", "250ms", func(c Config) bool { return c.RetryRefresh == 250*time.Millisecond }},
		{"retryRefresh", "off", func(c Config) bool { return c.RetryRefresh < 0 }},
		{"retryBudget", "off", func(c Config) bool { return c.NoBudget }},
		{"retryBudget", "on", func(c Config) bool { return !c.NoBudget && isSet(c, keyRetryBudget) }},
		{"retryBudget", "max=100,earn=0.1,timeoutCost=2", func(c Config) bool {
			return c.Budget == core.BudgetSettings{Max: 100, EarnPerAttempt: 0.1, OverloadCost: 2}
		}},
		{"retryBudget", "max=1e6,earn=0.001,timeoutCost=1000", func(c Config) bool {
			return c.Budget == core.BudgetSettings{Max: 1e6, EarnPerAttempt: 0.001, OverloadCost: 1000}
		}},
		{"retryBudget", "MAX=2,Earn=1,timeoutcost=1", func(c Config) bool {
			return c.Budget == core.BudgetSettings{Max: 2, EarnPerAttempt: 1, OverloadCost: 1}
		}},
		{"retryJitter", "equal", func(c Config) bool { return c.Jitter == core.JitterEqual }},
		{"retryJitter", "NONE", func(c Config) bool { return c.Jitter == core.JitterNone && isSet(c, keyRetryJitter) }},
		{"retryProperties", "/etc/crl/mssql-jdbc.properties", func(c Config) bool { return c.PropertiesPath == "/etc/crl/mssql-jdbc.properties" }},
	}
	for _, tt := range tests {
		for _, form := range []struct{ driver, dsn string }{
			{"sqlserver", "server=h;" + tt.key + "={" + tt.value + "};database=d"},
			{"sqlserver", "sqlserver://h?database=d&" + strings.ToUpper(tt.key) + "=" + tt.value},
		} {
			t.Run(form.dsn, func(t *testing.T) {
				c, out, err := ParseDSN(form.driver, form.dsn)
				require.NoError(t, err)
				assert.True(t, tt.check(c), "%s=%s gave %+v", tt.key, tt.value, c)
				assert.NotContains(t, strings.ToLower(out), strings.ToLower(tt.key), "the driver DSN still holds the key")
				_, err = c.Policy()
				assert.NoError(t, err, "Policy")
			})
		}
	}
}

func TestParseDSNBadValues(t *testing.T) {
	tests := []struct {
		dsn  string
		want []string // substrings of the error
		is   error
	}{
		{"server=h;connectRetryCount=300", []string{"config: ", `connectRetryCount="300"`, "0", "255"}, ErrInvalidValue},
		{"server=h;connectRetryCount=-1", []string{`connectRetryCount="-1"`}, ErrInvalidValue},
		{"server=h;loginTimeout=abc", []string{`loginTimeout="abc"`, "seconds"}, ErrInvalidValue},
		{"server=h;loginTimeout=70000", []string{`loginTimeout="70000"`, "65535"}, ErrInvalidValue},
		{"server=h;connectRetryInterval=0", []string{`connectRetryInterval="0"`, "1 to 60"}, ErrInvalidValue},
		{"server=h;connectRetryInterval=61", []string{`connectRetryInterval="61"`}, ErrInvalidValue},
		{"server=h;queryTimeout=-2", []string{`queryTimeout="-2"`}, ErrInvalidValue},
		{"server=h;retryRefresh=0", []string{`retryRefresh="0"`}, ErrInvalidValue},
		{"server=h;retryBudget=max=x", []string{`retryBudget="max=x"`, "max"}, ErrInvalidValue},
		{"server=h;retryBudget={max=0}", []string{`retryBudget="max=0"`}, ErrInvalidValue},
		{"server=h;retryBudget={size=3}", []string{`"size" is not a budget setting`}, ErrInvalidValue},
		{"server=h;retryJitter=wild", []string{`retryJitter="wild"`, "none, full or equal"}, ErrInvalidValue},
		{"server=h;retryExec={1205:x}", []string{`retryExec="1205:x"`, `"x"`}, core.ErrInvalidParameterNumber},
		{"server=h;retryExec={1205}", []string{`retryExec="1205"`}, core.ErrInvalidRuleFormat},
		{"server=h;retryConn={4060:3}", []string{`retryConn="4060:3"`}, core.ErrInvalidRuleFormat},
		{"server=h;retryExec=1205:3;1222:2", []string{"retryExec", `"1222:2"`, "braces"}, ErrMalformed},
		{"server=h;retryExec={1205:3};{1222:2}", []string{`"{1222:2}"`, "one pair of braces"}, ErrMalformed},
		{"server=h;retryExec={1205:3", []string{"retryExec", "not closed"}, ErrMalformed},
		{"server=h;retryExec={1205:3}x", []string{"retryExec", `"x"`, "expected ';'"}, ErrMalformed},
		{"server=h;retryExec={1205:3};RETRYEXEC={1222:2}", []string{"retryExec given twice"}, ErrDuplicateKey},
		{"sqlserver://h?retryExec=%ZZ", []string{`retryExec="%ZZ"`, "percent"}, ErrInvalidValue},
		{"sqlserver://h?connectRetryCount=300", []string{`connectRetryCount="300"`}, ErrInvalidValue},
		{"sqlserver://h?loginTimeout=abc", []string{`loginTimeout="abc"`}, ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			_, _, err := ParseDSN("sqlserver", tt.dsn)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
			assert.ErrorIs(t, err, tt.is)
		})
	}
	_, _, err := ParseDSN("mysql", "u@tcp(h)/db?connectRetryCount=300")
	assert.ErrorContains(t, err, `connectRetryCount="300"`, "mysql")
	_, _, err = ParseDSN("pgx", "host=h loginTimeout=abc")
	assert.ErrorContains(t, err, `loginTimeout="abc"`, "pgx")
	_, _, err = ParseDSN("sqlite3", "file:x.db?retryExec={1205:3}")
	assert.ErrorContains(t, err, "sqlite3", "unknown driver")
}

// allKeysQuery sets every key; values hold ';', '/', '+', ',' and '='.
const allKeysQuery = "retryExec={1205:3;1222:2,1+1}&retryConn=+4060&connectRetryCount=3&connectRetryInterval=2" +
	"&loginTimeout=20&queryTimeout=5&retryRefresh=10&retryBudget=max=50,earn=0.2&retryJitter=full" +
	"&retryProperties=/etc/crl/mssql-jdbc.properties"

// TestDriverDSN checks that each driver's own parser accepts the DSN
// without our keys, sees its own keys, and sees none of ours.
func TestDriverDSN(t *testing.T) {
	t.Run("go-mssqldb URL", func(t *testing.T) {
		_, out, err := ParseDSN("sqlserver", "sqlserver://sa:secret@db.example:1433/inst?database=shop&"+allKeysQuery+"&encrypt=disable&app+name=svc")
		require.NoError(t, err)
		checkMSSQL(t, out, "db.example", "shop")
	})
	t.Run("go-mssqldb ADO", func(t *testing.T) {
		ado := "server=db.example,1433;user id=sa;password=secret;database=shop;" +
			strings.NewReplacer("&", ";", "retryExec={1205:3;1222:2,1+1}", "retryExec={1205:3;1222:2,1+1}").Replace(allKeysQuery) +
			";encrypt=disable"
		c, out, err := ParseDSN("sqlserver", ado)
		require.NoError(t, err)
		assert.Equal(t, 3, c.ConnectRetryCount, "connectRetryCount")
		assert.Equal(t, "1205:3;1222:2,1+1", c.RetryExec, "retryExec")
		checkMSSQL(t, out, "db.example", "shop")
	})
	t.Run("go-mssqldb ODBC", func(t *testing.T) {
		_, out, err := ParseDSN("sqlserver", "odbc:server=db.example;user id=sa;password={se;cret};database=shop;retryExec={1205:3;1222:2};encrypt=disable")
		require.NoError(t, err)
		cfg := checkMSSQL(t, out, "db.example", "shop")
		assert.Equal(t, "se;cret", cfg.Password, "password")
	})
	t.Run("go-sql-driver/mysql", func(t *testing.T) {
		_, out, err := ParseDSN("mysql", "app:s3cr/t@tcp(db.example:3306)/shop?parseTime=true&"+allKeysQuery+"&loc=UTC")
		require.NoError(t, err)
		cfg, err := mysql.ParseDSN(out)
		require.NoError(t, err, "mysql.ParseDSN(%q)", out)
		assert.Equal(t, "db.example:3306", cfg.Addr, "Addr")
		assert.Equal(t, "shop", cfg.DBName, "DBName")
		assert.Equal(t, "s3cr/t", cfg.Passwd, "Passwd")
		assert.True(t, cfg.ParseTime, "ParseTime")
		assert.Empty(t, cfg.Params, "params reach the server (unknown keys would be sent as SET)")
	})
	for _, scheme := range []string{"postgres", "postgresql"} {
		t.Run("pgx "+scheme, func(t *testing.T) {
			_, out, err := ParseDSN("pgx", scheme+"://app:secret@db.example:5432/shop?sslmode=disable&"+allKeysQuery+"&application_name=svc")
			require.NoError(t, err)
			checkPgx(t, out)
		})
	}
	t.Run("pgx key=value", func(t *testing.T) {
		kv := "host=db.example port=5432 user=app password='se cret' dbname=shop sslmode=disable application_name=svc " +
			"retryExec={40001,40P01:3;1222:2} retryConn='+4060' connectRetryCount=3 loginTimeout=20 retryBudget={max=50, earn=0.2}"
		c, out, err := ParseDSN("pgx", kv)
		require.NoError(t, err)
		assert.Equal(t, "40001,40P01:3;1222:2", c.RetryExec, "retryExec")
		assert.Equal(t, "+4060", c.RetryConn, "retryConn")
		assert.Equal(t, 50.0, c.Budget.Max, "retryBudget max")
		checkPgx(t, out)
	})
}

func checkMSSQL(t *testing.T, dsn, host, db string) msdsn.Config {
	t.Helper()
	cfg, err := msdsn.Parse(dsn)
	require.NoError(t, err, "msdsn.Parse(%q)", dsn)
	assert.Equal(t, host, cfg.Host, "host")
	assert.Equal(t, db, cfg.Database, "database")
	assert.Equal(t, "sa", cfg.User, "user")
	for k := range cfg.Parameters {
		_, ours := lookupKey(k)
		assert.False(t, ours, "go-mssqldb sees %s in %q", k, dsn)
	}
	return cfg
}

func checkPgx(t *testing.T, dsn string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err, "pgx.ParseConfig(%q)", dsn)
	assert.Equal(t, "db.example", cfg.Host, "host")
	assert.Equal(t, "shop", cfg.Database, "database")
	assert.Equal(t, "app", cfg.User, "user")
	assert.Equal(t, "svc", cfg.RuntimeParams["application_name"], "runtime params %v", cfg.RuntimeParams)
	for k := range cfg.RuntimeParams { // sent to the server at startup
		_, ours := lookupKey(k)
		assert.False(t, ours, "pgx sends %s to the server: %q", k, dsn)
	}
}

// TestNoRuleDroppedFromADODSN: a part without a key right after one of our
// values (blank parts between included) is the rest of that value; the
// driver would ignore it and its rule would be lost, so it is an error
// naming the part (issue 11, item 1).
func TestNoRuleDroppedFromADODSN(t *testing.T) {
	for _, dsn := range []string{
		"server=h;retryExec={1205:3};1222:2,1",
		"server=h;retryExec=1205:3;;1222:2,1",
		"server=h;retryExec={1205:3};;1222:2,1",
		"server=h;retryExec=\"1205:3\"; ;1222:2,1",
		"server=h;retryConn={+4060};40613;database=x",
		"odbc:server=h;retryExec={1205:3};1222:2,1",
	} {
		_, out, err := ParseDSN("sqlserver", dsn)
		require.Error(t, err, "ParseDSN(%q) kept %q", dsn, out)
		assert.ErrorIs(t, err, ErrMalformed, dsn)
		assert.Regexp(t, `"(1222:2,1|40613)"`, err.Error(), dsn)
	}
	// Blank parts alone, and keyless parts after a driver key, are the
	// driver's business.
	for _, dsn := range []string{"server=h;retryExec={1205:3};;database=x;", "server=h;retryExec={1205:3};database=x;;"} {
		c, _, err := ParseDSN("sqlserver", dsn)
		require.NoError(t, err, dsn)
		assert.Equal(t, "1205:3", c.RetryExec)
	}
}

// TestNearMissKeys: a key a few edits away from one of ours (any case) is
// an error naming it and the key it probably meant, in every DSN form and
// in the properties file; the drivers' own keys are never taken for one
// (issue 11, item 2).
func TestNearMissKeys(t *testing.T) {
	for _, tc := range []struct{ driver, dsn, typo, meant string }{
		{"sqlserver", "server=h;retryExecc={1205:3,1}", "retryExecc", "retryExec"},
		{"sqlserver", "sqlserver://h?database=x&retryBudgte=off", "retryBudgte", "retryBudget"},
		{"sqlserver", "sqlserver://h?RETRYCONNN=%2B4060", "RETRYCONNN", "retryConn"},
		{"sqlserver", "server=h;connect_retry_count=3", "connect_retry_count", "connectRetryCount"},
		{"sqlserver", "odbc:server=h;logintimeuot=5", "logintimeuot", "loginTimeout"},
		{"mysql", "u@tcp(h)/db?parseTime=true&querytimout=5", "querytimout", "queryTimeout"},
		{"pgx", "host=h retry_exec={1205:3,1}", "retry_exec", "retryExec"},
		{"pgx", "postgres://u@h/db?retryJiter=full", "retryJiter", "retryJitter"},
	} {
		_, _, err := ParseDSN(tc.driver, tc.dsn)
		require.Error(t, err, tc.dsn)
		assert.ErrorIs(t, err, ErrUnknownKey, tc.dsn)
		assert.Contains(t, err.Error(), `"`+tc.typo+`"`, tc.dsn)
		assert.Contains(t, err.Error(), "did you mean "+tc.meant, tc.dsn)
	}
	// The drivers' own keys, and keys far from ours, pass through.
	for _, tc := range []struct{ driver, dsn string }{
		{"sqlserver", "server=h;user id=u;password=p;database=d;connection timeout=5;dial timeout=3;keepAlive=30;" +
			"encrypt=disable;app name=x;packet size=4096;log=1;disableretry=true;failoverpartner=f;protocol=tcp"},
		{"mysql", "u@tcp(h)/db?timeout=1s&readTimeout=2s&writeTimeout=2s&parseTime=true&rejectReadOnly=true&loc=UTC"},
		{"pgx", "host=h connect_timeout=5 lock_timeout=1000 statement_timeout=10 application_name=x sslmode=disable"},
	} {
		_, out, err := ParseDSN(tc.driver, tc.dsn)
		require.NoError(t, err, tc.dsn)
		assert.Equal(t, tc.dsn, out)
	}
	_, err := ParseProperties("p", []byte("retryExce=1205:3\n"))
	require.ErrorIs(t, err, ErrUnknownKey)
	assert.Contains(t, err.Error(), "did you mean retryExec")
}

// TestParseDSNKeepsTheDriversText: the DSN for the driver is rebuilt from
// where the lexer found each pair, with no second reading: the driver's
// pairs are left as written, a query keeps its '?' while it has a pair
// (a MySQL parameter taken out after the '?' hands it on), and a MySQL
// key of ours without '=' is the driver's.
func TestParseDSNKeepsTheDriversText(t *testing.T) {
	for _, tc := range []struct{ driver, dsn, out string }{
		{"mysql", "u@tcp(h)/db?retryExec={1205:1,1}&retryConn={+4060}&loc=UTC", "u@tcp(h)/db?loc=UTC"},
		{"mysql", "u@tcp(h)/db?loc=UTC&retryExec={1205:1,1}&parseTime=true", "u@tcp(h)/db?loc=UTC&parseTime=true"},
		{"mysql", "u:p?w@tcp(h)/db?retryExec={1205:1,1}?loc=UTC", "u:p?w@tcp(h)/db?loc=UTC"},
		{"mysql", "u@tcp(h)/db?retryExec&loc=UTC", "u@tcp(h)/db?retryExec&loc=UTC"},
		{"sqlserver", "sqlserver://h?retryExec={1205:1,1}&&database=d", "sqlserver://h?&database=d"},
		{"sqlserver", "sqlserver://h?retryExec#f", "sqlserver://h#f"},
		{"sqlserver", "server=h;retryExec={1205:3};", "server=h"},
		{"sqlserver", "odbc:retryExec={1205:3};server=h", "odbc:server=h"},
		{"pgx", "host=h   retryExec={1205:1,1}   port=5 ", "host=h port=5"},
		{"pgx", "host=h retryExec={1205:1,1} password='a b", "host=h password='a b"},
	} {
		_, out, err := ParseDSN(tc.driver, tc.dsn)
		require.NoError(t, err, tc.dsn)
		assert.Equal(t, tc.out, out, tc.dsn)
	}
}

// TestParseDSNMalformedValueQuotesItRedacted: a value of ours that the
// lexer cannot read is an error naming the key and quoting the start of
// the value, with what follows it redacted.
func TestParseDSNMalformedValueQuotesItRedacted(t *testing.T) {
	for _, tc := range []struct{ driver, dsn, want string }{
		{"sqlserver", "server=h;retryExec={1205:3;password=S3cret", `retryExec: the brace opened at "{1205:3;password=xxx…" is not closed, expected a value such as {1205:3;1222:2}`},
		{"sqlserver", "odbc:server=h;retryExec={1205:3}pwd=S3cret;x=1", `retryExec: "pwd=xxxxx;x=1" follows the closing brace or quote, expected ';'`},
		{"sqlserver", `server=h;retryConn="+4060`, "retryConn: the double quote is not closed"},
		{"pgx", "host=h retryExec={1205:3 password=S3cret", `retryExec: the brace opened at "{1205:3 password=xxx…" is not closed, expected a value such as {1205:3;1222:2}`},
		{"pgx", "host=h RETRYEXEC='{1205:3}", "retryExec: the quote is not closed"},
	} {
		_, _, err := ParseDSN(tc.driver, tc.dsn)
		require.ErrorIs(t, err, ErrMalformed, tc.dsn)
		assert.Equal(t, "config: DSN: "+tc.want, err.Error(), tc.dsn)
		assert.NotContains(t, err.Error(), "S3cret", tc.dsn)
	}
}

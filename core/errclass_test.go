package core_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// driverError returns the driver's own error value for the error token
// tok of family f: go-mssqldb's mssql.Error, go-sql-driver/mysql's
// *MySQLError, pgx's *PgError.
func driverError(t *testing.T, f family.Family, tok string) error {
	t.Helper()
	switch f.Profile().Errors {
	case family.NumberedErrors:
		n := mustNumber(t, tok)
		return mssql.Error{Number: int32(n), Class: 16, Message: "scripted"}
	case family.MySQLErrors:
		return &mysql.MySQLError{Number: uint16(mustNumber(t, tok)), Message: "scripted"}
	default:
		return &pgconn.PgError{Severity: "ERROR", Code: tok, Message: "scripted"}
	}
}

func mustNumber(t *testing.T, tok string) int {
	t.Helper()
	n := 0
	for _, c := range tok {
		require.True(t, c >= '0' && c <= '9', "%q is no number", tok)
		n = n*10 + int(c-'0')
	}
	return n
}

// Each class token, on each family, retries every error of the class
// (the driver's own error value), and crl explain's numbers (Rule.Errors)
// are those the loop retries.
func TestClassTokensRetryEveryErrorOfTheClass(t *testing.T) {
	for _, class := range []string{"deadlock", "serialization", "lockTimeout", "failover", "throttle", "timeout"} {
		rules := mustRules(t, "{"+class+":1,0}")
		require.Equal(t, 1, rules.Len())
		rule := rules.Rules()[0]
		assert.Equal(t, class, rule.Token())
		for _, f := range family.All() {
			toks := rule.Errors(f.Driver())
			if class != "timeout" {
				assert.NotEmpty(t, toks, "%s on %s", class, f)
			}
			for _, tok := range toks {
				r, _ := newRetrier(t, core.Policy{Statement: rules}, core.Options{})
				calls := 0
				err := r.Do(context.Background(), "UPDATE t SET a = 1", failing(&calls, driverError(t, f, tok)))
				assert.NoError(t, err, "%s %s on %s", class, tok, f)
				assert.Equal(t, 2, calls, "%s %s on %s: retried once", class, tok, f)
				got, ok := rules.LookupError(driverError(t, f, tok))
				assert.True(t, ok && got.Token() == class, "LookupError: %s %s on %s", class, tok, f)
			}
		}
	}
}

// A number means what its family says: 1205 is a deadlock victim from
// go-mssqldb and a lock-wait time-out from go-sql-driver/mysql.
func TestClassesArePerFamily(t *testing.T) {
	rules := mustRules(t, "{deadlock:1,0}")
	for _, tc := range []struct {
		err   error
		retry bool
	}{
		{mssql.Error{Number: 1205}, true},
		{&mysql.MySQLError{Number: 1205}, false},
		{&mysql.MySQLError{Number: 1213}, true},
		{mssql.Error{Number: 1213}, false},
		{&pgconn.PgError{Code: "40P01"}, true},
		{&pgconn.PgError{Code: "40001"}, false},
	} {
		_, ok := rules.LookupError(tc.err)
		assert.Equal(t, tc.retry, ok, "%v", tc.err)
	}
	r, ok := rules.Lookup(1205)
	assert.True(t, ok, "Lookup reads a number as SQL Server's")
	assert.Equal(t, "deadlock", r.Token())
	_, ok = rules.Lookup(1213)
	assert.False(t, ok)
}

// A number or SQLSTATE named in a rule wins over a class that holds it,
// wherever it stands.
func TestNumberWinsOverClass(t *testing.T) {
	for _, value := range []string{"{1205:5,1};{deadlock:1,0}", "{deadlock:1,0};{1205:5,1}"} {
		rules := mustRules(t, value)
		r, ok := rules.LookupError(mssql.Error{Number: 1205})
		require.True(t, ok, value)
		assert.Equal(t, 5, r.Count(), value)
		assert.Equal(t, []string{"1205"}, r.Errors("sqlserver"))
	}
}

// Class words are read in any case and printed as the docs write them;
// retryConn takes the classes a login can fail with.
func TestClassWords(t *testing.T) {
	rules := mustRules(t, "{DEADLOCK, Serialization, locktimeout:3,100ms*2}")
	assert.Equal(t, "{deadlock:3,100ms*2};{serialization:3,100ms*2};{lockTimeout:3,100ms*2}", rules.String())
	assert.Empty(t, mustRules(t, "{badconn:1,0}").Rules()[0].Errors("mysql"), "a broken connection has no number")
	assert.Equal(t, []string{"1969", "3024"}, mustRules(t, "{timeout:1,0}").Rules()[0].Errors("mariadb"))

	conn, err := core.ParseConnectionRules("{+failover,throttle}")
	require.NoError(t, err)
	assert.True(t, conn.Retryable(40613), "failover holds 40613")
	assert.True(t, conn.Retryable(40501))
	assert.False(t, conn.Retryable(1205))
	_, err = core.ParseConnectionRules("{+deadlock}")
	require.ErrorIs(t, err, core.ErrInvalidParameterNumber)
	assert.Contains(t, err.Error(), `"deadlock" is a class of statement errors`)
	assert.Contains(t, err.Error(), "failover, throttle, badconn, timeout")
}

// sqlClientTransient is Microsoft.Data.SqlClient's default transient list
// (SqlConfigurableRetryFactory); efCoreTransient is EF Core's
// SqlServerTransientExceptionDetector's.
var (
	sqlClientTransient = []int{233, 997, 1204, 1205, 1222, 4060, 4221, 10060, 10928, 10929, 40143, 40197, 40501, 40540,
		40613, 42108, 42109, 49918, 49919, 49920}
	efCoreTransient = []int{49983, 49977, 49920, 49919, 49918, 49802, 49510, 47139, 47137, 47132, 45547, 45319, 45182,
		45179, 45161, 45157, 45156, 45153, 42109, 42108, 42029, 41840, 41839, 41823, 41701, 41700, 41640, 41619, 41614,
		41383, 41339, 41325, 41305, 41302, 41301, 40938, 40918, 40903, 40890, 40675, 40671, 40648, 40642, 40623, 40613,
		40540, 40501, 40197, 40189, 40143, 40106, 39152, 39151, 39110, 39108, 39025, 37327, 37202, 35293, 35256, 35218,
		35216, 33123, 30085, 30080, 25740, 25738, 25003, 22984, 22760, 22759, 22758, 22754, 22498, 22493, 22491, 22430,
		22427, 22358, 22355, 22353, 22335, 22226, 22225, 21503, 20041, 19494, 19416, 19413, 18858, 18401, 17889, 17197,
		17067, 17066, 17065, 16555, 16554, 16528, 14906, 14868, 14817, 14355, 11539, 11001, 10936, 10930, 10929, 10928,
		10922, 10060, 10054, 10053, 9985, 9515, 9020, 8651, 8645, 8628, 7951, 6292, 5529, 5280, 4221, 3980, 4184, 4117,
		4060, 3966, 3960, 3957, 3953, 3950, 3948, 3947, 3941, 3935, 3635, 3429, 2816, 2021, 1807, 1535, 1534, 1533, 1532,
		1438, 1421, 1413, 1404, 1232, 1222, 1221, 1216, 1215, 1205, 1204, 1203, 997, 988, 982, 952, 941, 927, 926, 921,
		669, 617, 615, 601, 539, 233, 203, 121, 64, 20, -2}
)

// Every number of SqlClient's and EF Core's transient lists is in a class
// on SQL Server, or docs/rules.md lists it with the reason it is not.
func TestPeersTransientNumbersAreClassedOrDocumented(t *testing.T) {
	doc := rulesDoc(t)
	start := strings.Index(doc, "#### SQL Server's transient lists elsewhere")
	require.Positive(t, start)
	section := doc[start:]
	if end := strings.Index(section[5:], "\n#"); end > 0 {
		section = section[:end+5]
	}
	for _, n := range append(append([]int(nil), sqlClientTransient...), efCoreTransient...) {
		if n >= 0 {
			if r, ok := mustRules(t, "{deadlock,serialization,lockTimeout,failover,throttle:1,0}").Lookup(int32(n)); ok {
				assert.NotContains(t, regexp.MustCompile(`\b`+strconv.Itoa(n)+`\b`).FindString(section), strconv.Itoa(n),
					"%d is in class %s and in the list of numbers in no class", n, r.Token())
				continue
			}
		}
		assert.Regexp(t, `[ (]`+regexp.QuoteMeta(strconv.Itoa(n))+`[,.) ]`, section, "%d: in no class and not in docs/rules.md", n)
	}
}

// docs/rules.md's class tables list each family's errors of each class,
// as the family table has them.
func TestRulesDocHasTheClassTables(t *testing.T) {
	doc := rulesDoc(t)
	heading := map[family.Family]string{family.SQLServer: "#### SQL Server and Azure SQL", family.MySQL: "#### MySQL and MariaDB", family.Postgres: "#### PostgreSQL"}
	token := regexp.MustCompile(`\b[0-9][0-9A-Z]{1,4}\b`)
	for f, h := range heading {
		start := strings.Index(doc, h)
		require.Positive(t, start, h)
		section := doc[start+len(h):]
		section = section[:strings.Index(section, "\n####")]
		for _, class := range []string{"deadlock", "serialization", "lockTimeout", "failover", "throttle", "timeout"} {
			row := regexp.MustCompile("(?m)^\\| `" + class + "` \\| (.*) \\|$").FindStringSubmatch(section)
			require.Len(t, row, 2, "%s: no row for %s", f, class)
			var listed []string
			for _, tok := range token.FindAllString(row[1], -1) {
				if !slices.Contains(listed, tok) {
					listed = append(listed, tok)
				}
			}
			want := mustRules(t, "{"+class+":1,0}").Rules()[0].Errors(f.Driver())
			assert.ElementsMatch(t, want, listed, "%s: %s", f, class)
		}
	}
}

func rulesDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "rules.md"))
	require.NoError(t, err)
	return string(b)
}

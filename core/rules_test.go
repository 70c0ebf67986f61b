package core_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/internal/tables/limits"
)

// statementCase is one retryExec value with, for each error number, the
// waits its rule must have (nil: no rule).
type statementCase struct {
	name   string
	value  string
	waits  map[int32][]time.Duration
	filter map[int32][]string
}

// Every example of the JDBC documentation and of mssql-jdbc's own test
// suite (ConfigurableRetryLogicTest) that the JDBC driver accepts.
var validStatementCases = []statementCase{
	// JDBC documentation: timing strings table.
	{name: "doc timing 3", value: "{1205:3}", waits: map[int32][]time.Duration{1205: coretest.Seconds(0, 2, 4)}},
	{name: "doc timing 3,5", value: "{1205:3,5}", waits: map[int32][]time.Duration{1205: coretest.Seconds(5, 7, 9)}},
	{name: "doc timing 3,5+5", value: "{1205:3,5+5}", waits: map[int32][]time.Duration{1205: coretest.Seconds(5, 10, 15)}},
	{name: "doc timing 3,2*2", value: "{1205:3,2*2}", waits: map[int32][]time.Duration{1205: coretest.Seconds(2, 4, 8)}},
	{name: "doc timing 4,1*", value: "{1205:4,1*}", waits: map[int32][]time.Duration{1205: coretest.Seconds(1, 1, 1, 1)}},
	{name: "doc constant wait", value: "{1205:3,5+0}", waits: map[int32][]time.Duration{1205: coretest.Seconds(5, 5, 5)}},
	// JDBC documentation: statement examples.
	{name: "doc url example", value: "{1205,1222:3,2*2:select,update}",
		waits:  map[int32][]time.Duration{1205: coretest.Seconds(2, 4, 8), 1222: coretest.Seconds(2, 4, 8)},
		filter: map[int32][]string{1205: {"select", "update"}, 1222: {"select", "update"}}},
	{name: "doc properties form without braces", value: "1205,1222:3,2*2:select,update",
		waits: map[int32][]time.Duration{1205: coretest.Seconds(2, 4, 8), 1222: coretest.Seconds(2, 4, 8)}},
	{name: "doc 1205,1222:3,5+5", value: "{1205,1222:3,5+5}", waits: map[int32][]time.Duration{1205: coretest.Seconds(5, 10, 15), 1222: coretest.Seconds(5, 10, 15)}},
	{name: "doc 2714:2,1*2", value: "{2714:2,1*2}", waits: map[int32][]time.Duration{2714: coretest.Seconds(1, 2)}},
	{name: "doc filter select,update", value: "{1205:4,2+2:select,update}", waits: map[int32][]time.Duration{1205: coretest.Seconds(2, 4, 6, 8)},
		filter: map[int32][]string{1205: {"select", "update"}}},
	{name: "doc two rules", value: "{1205:3,5+5};{1222:2,2}", waits: map[int32][]time.Duration{1205: coretest.Seconds(5, 10, 15), 1222: coretest.Seconds(2, 4)}},
	{name: "doc writes", value: "{1205,1222:4,2*2:insert,update,delete,merge}", waits: map[int32][]time.Duration{1205: coretest.Seconds(2, 4, 8, 16), 1222: coretest.Seconds(2, 4, 8, 16)},
		filter: map[int32][]string{1222: {"insert", "update", "delete", "merge"}}},
	{name: "doc schema", value: "{2714:2,1+1};{3702:2,1+1}", waits: map[int32][]time.Duration{2714: coretest.Seconds(1, 2), 3702: coretest.Seconds(1, 2)}},
	{name: "doc properties file", value: "1205:3,5+5;1222:2,2", waits: map[int32][]time.Duration{1205: coretest.Seconds(5, 10, 15), 1222: coretest.Seconds(2, 4)}},
	{name: "doc properties file filter", value: "1205:3,5+5:select,update", waits: map[int32][]time.Duration{1205: coretest.Seconds(5, 10, 15)}},
	// mssql-jdbc test suite.
	{name: "suite conn string option", value: "{2714:3,2*2:CREATE;2715:1,3}", waits: map[int32][]time.Duration{2714: coretest.Seconds(2, 4, 8), 2715: coretest.Seconds(3)},
		filter: map[int32][]string{2714: {"create"}, 2715: nil}},
	{name: "suite single immediate retry", value: "{2714:1;}", waits: map[int32][]time.Duration{2714: coretest.Seconds(0)}},
	{name: "suite single 5s retry", value: "{2714:1,5;}", waits: map[int32][]time.Duration{2714: coretest.Seconds(5)}},
	{name: "suite two retries 2*3", value: "{2714,2716:2,2*3:CREATE}", waits: map[int32][]time.Duration{2714: coretest.Seconds(2, 6), 2716: coretest.Seconds(2, 6)}},
	{name: "suite two retries 3+4", value: "{2714,2716:2,3+4:CREATE}", waits: map[int32][]time.Duration{2714: coretest.Seconds(3, 7), 2716: coretest.Seconds(3, 7)}},
	{name: "suite multiple rules", value: "{2716:1,2*2:CREATE;2714:1,2*2:CREATE}", waits: map[int32][]time.Duration{2714: coretest.Seconds(2), 2716: coretest.Seconds(2)}},
	{name: "suite empty", value: "{}", waits: map[int32][]time.Duration{2714: nil}},
	// Classes by meaning, numbers read as SQL Server's.
	{name: "the default rule", value: "{deadlock,serialization:3,100ms*2}",
		waits: map[int32][]time.Duration{1205: coretest.Seconds(0.1, 0.2, 0.4), 3960: coretest.Seconds(0.1, 0.2, 0.4), 41325: coretest.Seconds(0.1, 0.2, 0.4), 1222: nil}},
	{name: "classes with a filter", value: "{lockTimeout,throttle:2,1:select};{failover:3,0}",
		waits:  map[int32][]time.Duration{1222: coretest.Seconds(1, 3), 40501: coretest.Seconds(1, 3), 40613: coretest.Seconds(0, 2, 4), 1205: nil},
		filter: map[int32][]string{1222: {"select"}, 40613: nil}},
	{name: "suite empty rule", value: "{;}", waits: map[int32][]time.Duration{2714: nil}},
	{name: "suite length 2", value: "{2714:1,3;}", waits: map[int32][]time.Duration{2714: coretest.Seconds(3)}},
	{name: "suite operand no change +", value: "{2714:1,3+;}", waits: map[int32][]time.Duration{2714: coretest.Seconds(3)}},
	{name: "suite operand no change *", value: "{2714:1,3*;}", waits: map[int32][]time.Duration{2714: coretest.Seconds(3)}},
	{name: "suite empty filter", value: "{2714:1,3:;}", waits: map[int32][]time.Duration{2714: coretest.Seconds(3)}, filter: map[int32][]string{2714: nil}},
	{name: "suite multi errors *", value: "{2714,2716:1,2*2:CREATE}", waits: map[int32][]time.Duration{2714: coretest.Seconds(2), 2716: coretest.Seconds(2)}},
	{name: "suite multi errors +", value: "{2714,2716:1,2+2:CREATE}", waits: map[int32][]time.Duration{2716: coretest.Seconds(2)}},
	{name: "suite multi errors no filter", value: "{2714,2716:1,2+2}", waits: map[int32][]time.Duration{2716: coretest.Seconds(2)}},
	{name: "suite long count", value: "{2714,2716:11,2+2:CREATE}", waits: map[int32][]time.Duration{2714: coretest.Seconds(2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22)}},
	{name: "suite big initial", value: "{2714,2716:4,100+1:CREATE}", waits: map[int32][]time.Duration{2714: coretest.Seconds(100, 101, 102, 103)}},
	// crl extensions.
	{name: "white space", value: " { 1205 , 1222 : 3 , 2 * 2 : select , update } ; { 40501 : 1 } ",
		waits: map[int32][]time.Duration{1205: coretest.Seconds(2, 4, 8), 40501: coretest.Seconds(0)}, filter: map[int32][]string{1222: {"select", "update"}}},
	{name: "units", value: "{1205:3,100ms*2}", waits: map[int32][]time.Duration{1205: coretest.Seconds(0.1, 0.2, 0.4)}},
	{name: "unit change", value: "{1205:3,1.5s+250ms}", waits: map[int32][]time.Duration{1205: coretest.Seconds(1.5, 1.75, 2)}},
	{name: "minutes", value: "{1205:2,2m}", waits: map[int32][]time.Duration{1205: coretest.Seconds(120, 122)}},
	{name: "fractional factor", value: "{1205:3,1*1.5}", waits: map[int32][]time.Duration{1205: coretest.Seconds(1, 1.5, 2.25)}},
	{name: "count 0 disables", value: "{1205:0}", waits: map[int32][]time.Duration{1205: {}}},
	{name: "count 255", value: "{1205:255,0+0}", waits: map[int32][]time.Duration{1205: make([]time.Duration, 255)}},
	{name: "later rule wins", value: "{1205:3};{1205:1,7}", waits: map[int32][]time.Duration{1205: coretest.Seconds(7)}},
	{name: "whole list in braces", value: "{1205:3;1222:1,1}", waits: map[int32][]time.Duration{1205: coretest.Seconds(0, 2, 4), 1222: coretest.Seconds(1)}},
	{name: "upper-case filter lowered", value: "{1205:1:SELECT}", filter: map[int32][]string{1205: {"select"}}},
	{name: "saturation *", value: "{1205:5,1000000000*1000000000}",
		waits: map[int32][]time.Duration{1205: {1e9 * time.Second, limits.MaxWait, limits.MaxWait, limits.MaxWait, limits.MaxWait}}},
	{name: "saturation +", value: "{1205:3,2147483000+1000}",
		waits: map[int32][]time.Duration{1205: {2147483000 * time.Second, limits.MaxWait, limits.MaxWait}}},
	{name: "jdbc trailing colon", value: "{1205:2,1:}", waits: map[int32][]time.Duration{1205: coretest.Seconds(1, 3)}},
}

func TestParseStatementRulesValid(t *testing.T) {
	for _, tc := range validStatementCases {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := core.ParseStatementRules(tc.value)
			require.NoError(t, err, "ParseStatementRules(%q)", tc.value)
			for n, want := range tc.waits {
				r, ok := rules.Lookup(n)
				if want == nil {
					require.False(t, ok, "Lookup(%d) found %v, want no rule", n, r)
					continue
				}
				require.True(t, ok, "Lookup(%d): no rule", n)
				// slices.Equal: an empty want and a nil WaitTimes are the same.
				got := r.WaitTimes()
				assert.True(t, slices.Equal(got, want), "Lookup(%d).WaitTimes() = %v, want %v", n, got, want)
				assert.Equal(t, len(want), r.Count(), "Lookup(%d).Count()", n)
			}
			for n, want := range tc.filter {
				r, _ := rules.Lookup(n)
				got := r.Filter()
				assert.True(t, slices.Equal(got, want), "Lookup(%d).Filter() = %q, want %q", n, got, want)
			}
			// Printed back, the rules parse to the same rules.
			again, err := core.ParseStatementRules(rules.String())
			require.NoError(t, err, "reparse %q", rules.String())
			assert.Equal(t, rules.String(), again.String(), "round trip of %q", rules.String())
			assertSameStatementRules(t, rules, again)
		})
	}
}

func assertSameStatementRules(t *testing.T, a, b core.StatementRules) {
	t.Helper()
	ra, rb := a.Rules(), b.Rules()
	require.Len(t, rb, len(ra), "%d rules vs %d", len(ra), len(rb))
	for i := range ra {
		assert.Equal(t, ra[i].Token(), rb[i].Token(), "rule %d: %v vs %v", i, ra[i], rb[i])
		// slices.Equal: a nil and an empty list are the same.
		assert.True(t, slices.Equal(ra[i].WaitTimes(), rb[i].WaitTimes()) && slices.Equal(ra[i].Filter(), rb[i].Filter()), "rule %d: %v vs %v", i, ra[i], rb[i])
	}
}

// Every rejection of the JDBC test suite and documentation, plus crl's
// stricter ones, with the exact sentinel and the token the message names.
var invalidStatementCases = []struct {
	value string
	want  error
	names string // the message must quote this
}{
	{"{2714,2716:1,2*2:CREATE:4}", core.ErrInvalidRuleFormat, "4 sections"},
	{"{2714,2716:1,2*2,1:CREATE}", core.ErrInvalidParameterNumber, `"1,2*2,1"`},
	{"{TEST:TEST}", core.ErrInvalidParameterNumber, `"TEST"`},
	{"{:1,2*2:CREATE}", core.ErrInvalidParameterNumber, `""`},
	{"{2714,2716:-1,2+2:CREATE}", core.ErrInvalidParameterNumber, `"-1"`},
	{"{2714,2716:4,-1+1:CREATE}", core.ErrInvalidParameterNumber, `"-1"`},
	{"{2714,2716:1,2AND2:CREATE}", core.ErrInvalidParameterNumber, `"2AND2"`},
	{"{1205,1222:3,2AND2}", core.ErrInvalidParameterNumber, `"2AND2"`},
	// A statement rule without timings: JDBC keeps it as a statement rule
	// with count 1 and wait 0 (the defaults), crl asks for the timings.
	{"{1205}", core.ErrInvalidRuleFormat, "needs timings"},
	{"{1205:3};{1222}", core.ErrInvalidRuleFormat, `"{1222}"`},
	// retryCount above 255: JDBC accepts any int.
	{"{1205:256}", core.ErrInvalidParameterNumber, `"256"`},
	{"{1205:99999999999}", core.ErrInvalidParameterNumber, `"99999999999"`},
	{"{1205:3,2*2*2}", core.ErrInvalidParameterNumber, `"2*2*2"`},
	{"{1205:3,2*2+1}", core.ErrInvalidParameterNumber, `"2*2+1"`},
	{"{1205:3,2*x}", core.ErrInvalidParameterNumber, `"x"`},
	{"{1205:3,2*-1}", core.ErrInvalidParameterNumber, `"-1"`},
	{"{1205:3,5years}", core.ErrInvalidParameterNumber, `"5years"`},
	{"{+1205:3}", core.ErrInvalidParameterNumber, `"+1205"`},
	{"{12{05:3}", core.ErrInvalidRuleFormat, "brace"},
	{"{1205:3:sel ect}", core.ErrInvalidRuleFormat, `"sel ect"`},
	{"{1205:3:select,,update}", core.ErrInvalidRuleFormat, `""`},
	{"{2147483648:1}", core.ErrInvalidParameterNumber, `"2147483648"`},
	{"{40P0:1}", core.ErrInvalidParameterNumber, `"40P0"`},
	// An unknown class word names itself and lists the classes.
	{"{deadlok:3,1}", core.ErrInvalidParameterNumber, `"deadlok" is not a number, a SQLSTATE or a class, expected an error number, a five-character SQLSTATE, or a class: deadlock, serialization, lockTimeout, failover, throttle, badconn, timeout (did you mean deadlock?)`},
	{"{deadlock,lockwait:3,1}", core.ErrInvalidParameterNumber, `"lockwait"`},
	{"{1205:}", core.ErrInvalidParameterNumber, `""`},
	// The rest of docs/rules.md's error table, each a value the JDBC
	// driver accepts with a meaning of its own.
	{"{1205:3::}", core.ErrInvalidRuleFormat, "4 sections"},
	{"{1205:3:select:}", core.ErrInvalidRuleFormat, "4 sections"},
	{"1205:", core.ErrInvalidParameterNumber, `""`},
	{"}1205:3{", core.ErrInvalidRuleFormat, "brace"},
	{"{1205:3", core.ErrInvalidRuleFormat, "not closed"},
	{"1205:3}", core.ErrInvalidRuleFormat, "without an opening one"},
	{"{1205,1222:3,2*2:sel", core.ErrInvalidRuleFormat, "not closed"},
	{"{1205:3: 0}", core.ErrInvalidRuleFormat, `" 0"`},
	{"{1205:3:select*}", core.ErrInvalidRuleFormat, `"select*"`},
	{"{1205:3:,select}", core.ErrInvalidRuleFormat, `""`},
	{"{1205:3,}", core.ErrInvalidParameterNumber, `""`},
	{"{1205:3,5,}", core.ErrInvalidParameterNumber, `"3,5,"`},
	{"{1205,:3}", core.ErrInvalidParameterNumber, `""`},
	{"{:3}", core.ErrInvalidParameterNumber, `"" is an empty error token`},
	{"{1213:3,2*2:select;update}", core.ErrInvalidRuleFormat, `"update" follows a rule with a filter`},
	{"{1213:3,2*2;update}", core.ErrInvalidRuleFormat, `"update" reads as a filter`},
	{"{select}", core.ErrInvalidRuleFormat, `"select" reads as a filter`},
	{"1205:3\x01", core.ErrInvalidParameterNumber, `"3\x01"`},
}

// TestUnbalancedBracesAreRejected: a value cut off mid-way (a brace never
// closed, or a closing brace without an opening one) is an error, for
// statement and connection rules alike (issue 11, item 3).
func TestUnbalancedBracesAreRejected(t *testing.T) {
	for _, v := range []string{"{1205:3", "1205:3}", "{1205,1222:3,2*2:sel", "{1205:3;1222:2",
		"1205:3;1222:2}", "{1205:3};{1222:2", "{1205:3}}", "{{1205:3}", "{1205:3;{1222:2}}"} {
		_, err := core.ParseStatementRules(v)
		require.Error(t, err, "ParseStatementRules(%q)", v)
		assert.ErrorIs(t, err, core.ErrInvalidRuleFormat, v)
		assert.Contains(t, err.Error(), "brace", v)
	}
	for _, v := range []string{"{+4060", "4060}", "{4060;40613", "{+4060};{40613"} {
		_, err := core.ParseConnectionRules(v)
		require.Error(t, err, "ParseConnectionRules(%q)", v)
		assert.ErrorIs(t, err, core.ErrInvalidRuleFormat, v)
	}
	// Balanced forms still parse.
	for _, v := range []string{"{1205:3;1222:2}", "{1205:3};{1222:2}", "1205:3;{1222:2}", "{}", "{;}", "{2714:1;}"} {
		_, err := core.ParseStatementRules(v)
		assert.NoError(t, err, v)
	}
}

// TestFilterZeroWithWhiteSpace: JDBC reads only a bare 0 as "no filter";
// "{1205:3: 0}" keeps the literal filter " 0" there, so crl rejects it
// rather than match every statement (issue 11, item 4).
func TestFilterZeroWithWhiteSpace(t *testing.T) {
	for _, v := range []string{"{1205:3: 0}", "{1205:3:  0}", "1205:3:\t0"} {
		_, err := core.ParseStatementRules(v)
		require.Error(t, err, v)
		assert.ErrorIs(t, err, core.ErrInvalidRuleFormat, v)
		assert.Contains(t, err.Error(), "white space", v)
	}
	r, err := core.ParseStatementRules("{1205:3:0}")
	require.NoError(t, err)
	rule, ok := r.Lookup(1205)
	require.True(t, ok)
	assert.Nil(t, rule.Filter(), "a bare 0 is no filter, as in JDBC")
	assert.True(t, rule.Matches("update t set a = 1"))
}

func TestParseStatementRulesInvalid(t *testing.T) {
	for _, tc := range invalidStatementCases {
		t.Run(tc.value, func(t *testing.T) {
			_, err := core.ParseStatementRules(tc.value)
			require.ErrorIs(t, err, tc.want, "ParseStatementRules(%q)", tc.value)
			assert.True(t, strings.HasPrefix(err.Error(), "core: rule "), "error %q should start with \"core: rule \"", err)
			assert.Contains(t, err.Error(), tc.names, "error %q should name %s", err, tc.names)
			var re *core.RuleError
			if assert.ErrorAs(t, err, &re, "error %v is not a *RuleError", err) {
				assert.NotEmpty(t, re.Rule, "error %v does not name its rule", err)
			}
		})
	}
}

// The exact messages of docs/rules.md's error list: an empty token says
// what it is, and a rule without timings whose words read as a filter
// says that ';' separates rules and ',' separates filter words.
func TestRuleErrorMessages(t *testing.T) {
	const timings = "a statement rule needs timings, expected {errors:count[,initial[op change]][:filter]} such as {1205:3,2*2}"
	for _, tc := range []struct {
		value, token, want string
	}{
		{"{:3}", "", `core: rule "{:3}": "" is an empty error token, expected an error number, a five-character SQLSTATE, or a class: deadlock, serialization, lockTimeout, failover, throttle, badconn, timeout`},
		{"{1205,:3}", "", `core: rule "{1205,:3}": "" is an empty error token, expected an error number, a five-character SQLSTATE, or a class: deadlock, serialization, lockTimeout, failover, throttle, badconn, timeout`},
		{"{1205:3,}", "", `core: rule "{1205:3,}": "" is an empty time, expected seconds such as 2 or a time with a unit such as 100ms`},
		{"{1213:3,2*2:select;update}", "update", `core: rule "update}": ` + timings +
			`; "update" follows a rule with a filter: ';' separates rules and ',' separates filter words, so write {1213:3,2*2:select,update}`},
		{"{1205:3,2*2:select,update};{1222:2:delete;insert}", "insert", `core: rule "insert}": ` + timings +
			`; "insert" follows a rule with a filter: ';' separates rules and ',' separates filter words, so write {1222:2:delete,insert}`},
		// A procedure's name is a filter word too, after a rule with a filter.
		{"{1205:3,1:exec;dbo}", "dbo", `core: rule "dbo}": ` + timings +
			`; "dbo" follows a rule with a filter: ';' separates rules and ',' separates filter words, so write {1205:3,1:exec,dbo}`},
		{"{1213:3,2*2;update}", "update", `core: rule "update}": ` + timings +
			`; "update" reads as a filter: ';' separates rules and ':' starts a rule's filter, so write {1213:3,2*2:update}`},
		{"{select,update}", "select,update", `core: rule "{select,update}": ` + timings +
			`; "select,update" reads as a filter: a rule's filter follows its timings after ':', such as {1205:3,2*2:select,update}`},
		// Errors, not filter words: no hint.
		{"{1205:3,1:select;1222}", "", `core: rule "1222}": ` + timings},
		{"{1205:3,1:select;timeout}", "", `core: rule "timeout}": ` + timings},
		{"{1205:3,1;dbo}", "", `core: rule "dbo}": ` + timings},
		{"{1205}", "", `core: rule "{1205}": ` + timings},
	} {
		_, err := core.ParseStatementRules(tc.value)
		require.Error(t, err, tc.value)
		assert.Equal(t, tc.want, err.Error(), tc.value)
		var re *core.RuleError
		require.ErrorAs(t, err, &re, tc.value)
		assert.Equal(t, tc.token, re.Token, "%s: the token named", tc.value)
	}
}

func TestTokens(t *testing.T) {
	rules, err := core.ParseStatementRules("{40P01,40001:2,10ms};{timeout,badconn:2,100ms*2}")
	require.NoError(t, err)
	if r, ok := ruleFor(rules, "40P01"); assert.True(t, ok, "ruleFor(40P01) not found") {
		assert.Equal(t, "40P01", r.Token(), "ruleFor(40P01).Token()")
	}
	_, ok := ruleFor(rules, "40p01")
	assert.True(t, ok, "ruleFor is case-insensitive")
	// An all-digit SQLSTATE is the same token as the number.
	_, ok = ruleFor(rules, "40001")
	assert.True(t, ok, "ruleFor(40001) not found")
	_, ok = rules.Lookup(40001)
	assert.True(t, ok, "Lookup(40001) not found")
	if r, ok := ruleFor(rules, "timeout"); assert.True(t, ok, "ruleFor(timeout) not found") {
		assert.Equal(t, coretest.Seconds(0.1, 0.2), r.WaitTimes(), "ruleFor(timeout).WaitTimes()")
	}
	_, ok = ruleFor(rules, "badconn")
	assert.True(t, ok, "ruleFor(badconn) not found")
	_, ok = rules.Lookup(-1)
	assert.False(t, ok, "Lookup(-1) must not find the timeout condition")
}

// ruleFor finds the rule of a token as a rule writes it (a SQLSTATE in
// either case, timeout, badconn) among the rules.
func ruleFor(rules core.StatementRules, tok string) (core.Rule, bool) {
	for _, r := range rules.Rules() {
		if strings.EqualFold(r.Token(), tok) {
			return r, true
		}
	}
	return core.Rule{}, false
}

func TestRuleMatches(t *testing.T) {
	rules, err := core.ParseStatementRules("{1205:1:select,update}")
	require.NoError(t, err)
	r, _ := rules.Lookup(1205)
	for q, want := range map[string]bool{
		"SELECT 1":                            true,
		"  select * from t":                   true,
		"Update t set a=1":                    true,
		"SELECT*FROM t":                       true,
		"(SELECT 1) UNION (SELECT 2)":         true,
		"-- note\nselect 1":                   true,
		"/* a /* nested */ comment */ UPDATE": true,
		"\ufeffselect 1":                      true,
		// JDBC's substring test would match these: "select,update" contains "date" and "up".
		"date":                                 false,
		"up":                                   false,
		"delete from t":                        false,
		"insert into t select * from u":        false,
		"selected":                             false,
		"with c as (select 1) select * from c": false,
		"":                                     false,
		"-- only a comment":                    false,
	} {
		assert.Equal(t, want, r.Matches(q), "Matches(%q)", q)
	}
	all, _ := core.ParseStatementRules("{1205:1}")
	r, _ = all.Lookup(1205)
	assert.True(t, r.Matches("anything at all"), "a rule without a filter matches every statement")
	assert.True(t, r.Matches(""), "a rule without a filter matches every statement, the empty one too")
}

func TestConnectionRules(t *testing.T) {
	builtin := core.TransientErrors()
	want := []int32{64, 233, 4060, 4221, 10053, 10054, 10928, 10929, 40020, 40143, 40166, 40197, 40501, 40540, 40613, 42108, 42109, 49918, 49919, 49920}
	require.Equal(t, want, builtin, "TransientErrors()")
	cases := []struct {
		value    string
		retry    []int32
		notRetry []int32
		replaces bool
	}{
		{"", want, []int32{1205, 18456, 9999}, false},
		{"{}", want, []int32{18456}, false},
		{"{+4060}", want, []int32{18456}, false},
		{"{+18456}", append([]int32{18456}, want...), []int32{1205}, false},
		{"{+18456,9999}", []int32{18456, 9999, 40613}, nil, false},
		{"{9999}", []int32{9999}, append([]int32{4060}, want...), true},
		{"{4060}", []int32{4060}, []int32{40613, 64}, true},
		{"{+4060};{40143}", []int32{4060, 40143}, []int32{40613}, true},
		{"{+4060};{+40143}", want, []int32{18456}, false},
		{"+4060,40143", want, nil, false},
		{" { + 18456 } ", []int32{18456, 64}, nil, false},
		{"{+4060,4070}", []int32{4060, 4070, 40613}, nil, false},
	}
	for _, tc := range cases {
		c, err := core.ParseConnectionRules(tc.value)
		require.NoError(t, err, "ParseConnectionRules(%q)", tc.value)
		for _, n := range tc.retry {
			assert.True(t, c.Retryable(n), "%q: Retryable(%d)", tc.value, n)
		}
		for _, n := range tc.notRetry {
			assert.False(t, c.Retryable(n), "%q: Retryable(%d)", tc.value, n)
		}
		assert.Equal(t, tc.replaces, c.Replaces(), "%q: Replaces()", tc.value)
		again, err := core.ParseConnectionRules(c.String())
		if assert.NoError(t, err, "%q: round trip of %q", tc.value, c.String()) {
			assert.Equal(t, c.String(), again.String(), "%q: round trip of %q", tc.value, c.String())
			assert.Equal(t, c.Replaces(), again.Replaces(), "%q: round trip of %q: Replaces()", tc.value, c.String())
		}
	}
}

func TestParseConnectionRulesInvalid(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  error
		names string
	}{
		{"{4060:3}", core.ErrInvalidRuleFormat, "no timings"},
		{"{+4060:3,2}", core.ErrInvalidRuleFormat, "no timings"},
		{"{abc}", core.ErrInvalidParameterNumber, `"abc"`},
		{"{+serialization}", core.ErrInvalidParameterNumber, `"serialization" is a class of statement errors`},
		{"{lockTimeout,4060}", core.ErrInvalidParameterNumber, `"lockTimeout"`},
		{"{+failovr}", core.ErrInvalidParameterNumber, `did you mean failover?`},
		{"{+}", core.ErrInvalidParameterNumber, `""`},
		{"{+4060,+4070}", core.ErrInvalidParameterNumber, `"+4070"`},
		{"{4060,,4070}", core.ErrInvalidParameterNumber, `""`},
		{"{40{60}", core.ErrInvalidRuleFormat, "brace"},
	} {
		_, err := core.ParseConnectionRules(tc.value)
		if assert.ErrorIs(t, err, tc.want, "ParseConnectionRules(%q)", tc.value) {
			assert.Contains(t, err.Error(), tc.names, "ParseConnectionRules(%q)", tc.value)
		}
	}
}

func TestZeroValues(t *testing.T) {
	var s core.StatementRules
	_, ok := s.Lookup(1205)
	assert.False(t, ok, "zero StatementRules has a rule for 1205")
	assert.Zero(t, s.Len(), "zero StatementRules has rules")
	assert.Empty(t, s.String(), "zero StatementRules prints rules")
	var c core.ConnectionRules
	assert.True(t, c.Retryable(40613), "zero ConnectionRules is not the builtin list: 40613")
	assert.False(t, c.Retryable(1205), "zero ConnectionRules is not the builtin list: 1205")
	assert.Empty(t, c.String(), "zero ConnectionRules prints rules")
}

func TestJitterText(t *testing.T) {
	for in, want := range map[string]core.Jitter{"": core.JitterNone, "none": core.JitterNone, "FULL": core.JitterFull, " equal ": core.JitterEqual} {
		got := core.JitterEqual + 1
		if assert.NoError(t, got.UnmarshalText([]byte(in)), "UnmarshalText(%q)", in) {
			assert.Equal(t, want, got, "UnmarshalText(%q)", in)
			text, err := got.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, want.String(), string(text), "MarshalText after %q", in)
		}
	}
	j := core.JitterFull
	err := j.UnmarshalText([]byte("half"))
	if assert.Error(t, err, "UnmarshalText(half)") {
		assert.Contains(t, err.Error(), `"half"`, "UnmarshalText(half)")
	}
	assert.Equal(t, core.JitterFull, j, "a bad value leaves the jitter as it was")
}

// The JDBC default change (+2 s) applies with units too.
func TestDefaultChangeWithUnits(t *testing.T) {
	rules := mustRules(t, "{1205:3,100ms};{1222:3,100ms+0}")
	a, _ := rules.Lookup(1205)
	b, _ := rules.Lookup(1222)
	assert.Equal(t, coretest.Seconds(0.1, 2.1, 4.1), a.WaitTimes(), "waits of {1205:3,100ms}")
	assert.Equal(t, coretest.Seconds(0.1, 0.1, 0.1), b.WaitTimes(), "waits of {1222:3,100ms+0}")
}

// A no-break space is not white space to the rules (nor to the JDBC
// driver): a filter of 0 followed by one is an error, never a rule without
// a filter, which would retry every statement (jdbcdiff found crl reading
// it as no filter, where JDBC keeps a filter that matches almost nothing).
func TestNoBreakSpaceIsNotWhiteSpace(t *testing.T) {
	for _, s := range []string{"{10054,1222:5,1+0:0}\u00a0", "{1222:5,1+0:0\u00a0}", "\u00a0{1222:5,1}", "{1222:5,1+0:select\u00a0}"} {
		_, err := core.ParseStatementRules(s)
		require.Error(t, err, "%q", s)
		assert.ErrorIs(t, err, core.ErrInvalidRuleFormat, "%q", s)
	}
	r, err := core.ParseStatementRules(" {1222:5,1+0:0}\t")
	require.NoError(t, err, "ASCII white space is")
	rule, ok := r.Lookup(1222)
	require.True(t, ok)
	assert.Empty(t, rule.Filter())
}

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// secret is the password planted in every DSN below.
const secret = "S3cretPass"

// dsnForm writes a DSN of one form with secret as its password, and adds
// key=value settings to it the way the form does.
type dsnForm struct {
	name, driver string
	// with returns the DSN with settings, each key=value, placed where a
	// quoted piece of the DSN would run on into the password.
	with func(settings ...string) string
}

var dsnForms = []dsnForm{
	{"sqlserver URL", "", func(s ...string) string {
		return "sqlserver://sa:" + secret + "@db:1433/inst" + query("?database=shop", s)
	}},
	{"sqlserver URL, password in the query", "", func(s ...string) string {
		return "sqlserver://db?database=shop" + query("", s) + "&password=" + secret
	}},
	{"mysql URL", "", func(s ...string) string { return "mysql://app:" + secret + "@db/shop" + query("?x=1", s) }},
	{"postgres URL", "", func(s ...string) string {
		return "postgres://app:" + secret + "@db:5432/shop" + query("?sslmode=disable", s)
	}},
	{"ADO", "", func(s ...string) string {
		return "server=db;user id=sa;" + strings.Join(append(s, "password="+secret, "database=shop"), ";")
	}},
	{"ODBC", "", func(s ...string) string {
		return "odbc:server=db;uid=sa;" + strings.Join(append(s, "pwd={"+secret+"}"), ";")
	}},
	{"MySQL", "", func(s ...string) string { return "app:" + secret + "@tcp(db:3306)/shop" + query("?parseTime=true", s) }},
	{"MySQL without tcp()", "", func(s ...string) string { return "app:" + secret + "@db:3306/shop" + query("?x=1", s) }},
	{"MySQL without tcp(), -driver mysql", "mysql", func(s ...string) string {
		return "app:" + secret + "@db:3306/shop" + query("?x=1", s)
	}},
	{"key=value", "", func(s ...string) string {
		return "host=db user=app " + strings.Join(append(s, "password="+secret, "dbname=shop"), " ")
	}},
}

// query returns the query of a URL or MySQL DSN: first (a '?' and a
// parameter, or "" when the query has begun), then settings.
func query(first string, settings []string) string {
	for _, s := range settings {
		first += "&" + s
	}
	return first
}

// Every message of check and explain, on every error path, quotes a DSN
// without its password, whatever its form.
func TestNoMessageHoldsThePassword(t *testing.T) {
	dir := isolate(t)
	missing := filepath.Join(dir, "missing.properties")
	for _, form := range dsnForms {
		for _, fault := range []struct {
			name     string
			settings []string
			flags    []string
		}{
			{"no fault", nil, nil},
			{"unclosed brace", []string{"retryExec={1205:3,1"}, nil},
			{"text after the brace", []string{"retryExec={1205:3,1}x"}, nil},
			{"near key", []string{"retryExce={1205:3,1}"}, nil},
			{"duplicate key", []string{"retryExec={1205:3,1}", "RETRYEXEC={1222:3,1}"}, nil},
			{"bad value", []string{"connectRetryCount=300"}, nil},
			{"bad rule", []string{"retryExec={1205:3,2AND2}"}, nil},
			{"missing properties file", []string{"retryProperties=" + missing}, nil},
			{"bad -querytimeout", nil, []string{"-querytimeout", "soon"}},
			{"two rule arguments", nil, []string{"{1205:3,1}", "{1222:3,1}"}},
			{"a wrong -driver", nil, []string{"-driver", "nosuchdriver"}},
		} {
			dsn := form.with(fault.settings...)
			for _, cmd := range []string{"check", "explain"} {
				args := []string{cmd, "-dsn", dsn}
				if form.driver != "" {
					args = append(args, "-driver", form.driver)
				}
				args = append(args, fault.flags...)
				code, out, errOut := runCRL(args...)
				assert.NotContains(t, out+errOut, "S3cret", "%s, %s: crl %q (exit %d) printed the password:\n%s%s", form.name, fault.name, args, code, out, errOut)
				// Each fault is an error path (a key=value DSN takes text
				// after a brace for the driver's).
				fails := fault.name != "no fault" || form.driver == "" && strings.Contains(form.name, "without tcp()")
				if fails && !(form.name == "key=value" && fault.name == "text after the brace") {
					assert.NotEqual(t, 0, code, "%s, %s: crl %q", form.name, fault.name, args)
				}
			}
		}
	}
}

// The DSN whose driver cannot be told is quoted, redacted, so the user
// sees which DSN it is.
func TestUnknownFormQuotesTheDSNRedacted(t *testing.T) {
	isolate(t)
	for _, dsn := range []string{"app:" + secret + "@db:3306/shop", "mysql://app:" + secret + "@db/shop"} {
		code, _, errOut := runCRL("check", "-dsn", dsn)
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "app:xxxxx@db", dsn)
		assert.Contains(t, errOut, "-driver", dsn)
		assert.NotContains(t, errOut, secret, dsn)
	}
}

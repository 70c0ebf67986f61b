package core_test

import (
	"fmt"

	"github.com/crl-go/crl/core"
)

func ExampleParseStatementRules() {
	rules, err := core.ParseStatementRules("{1205,1222:3,2*2:select,update}")
	if err != nil {
		panic(err)
	}
	r, _ := rules.Lookup(1205)
	fmt.Println(r.WaitTimes())
	fmt.Println(r.Matches("UPDATE t SET a = 1"), r.Matches("DELETE FROM t"))
	// Output:
	// [2s 4s 8s]
	// true false
}

func ExampleParseStatementRules_error() {
	_, err := core.ParseStatementRules("{1205:3,2AND2}")
	fmt.Println(err)
	// Output:
	// core: rule "{1205:3,2AND2}": "2AND2" is not a number, expected seconds such as 2 or a time with a unit such as 100ms, 1.5s or 2m
}

func ExampleConnectionRules_Retryable() {
	appended, _ := core.ParseConnectionRules("{+18456}")
	replaced, _ := core.ParseConnectionRules("{18456}")
	fmt.Println(appended.Retryable(18456), appended.Retryable(40613))
	fmt.Println(replaced.Retryable(18456), replaced.Retryable(40613))
	// Output:
	// true true
	// true false
}

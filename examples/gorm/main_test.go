package main

import "testing"

func TestExampleRunsAgainstTheStandIn(t *testing.T) {
	if err := run(""); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNoNoteForExplicitChanges(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"check", "-exec", "{1205:3,10ms+0};{1222:3,2*2};{40613:2,5};{1:1}"}, &out, &errOut); code != 0 || strings.Contains(out.String(), "note:") {
		t.Errorf("exit %d, output %q", code, out.String()+errOut.String())
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.properties")
	bad := filepath.Join(dir, "bad.properties")
	os.WriteFile(good, []byte("retryExec=1205:3,5+5;1222:2,2\nretryConn=+4060,40143\n"), 0o600)
	os.WriteFile(bad, []byte("# comment\nretryExec={1205:3,2AND2}\n"), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		out  []string
	}{
		{[]string{"check", "-exec", "{1205,1222:3,2*2:select,update}", "-conn", "{+4060}"}, 0, []string{"ok: 2 statement rule(s)", "added to the builtin list"}},
		{[]string{"check", "-exec", "{1205:3,2AND2}"}, 1, []string{`"2AND2" is not a number`}},
		{[]string{"check", "-conn", "{4060:3}"}, 1, []string{"no timings"}},
		{[]string{"check", "-file", good}, 0, []string{"ok: 2 statement rule(s)"}},
		{[]string{"check", "-file", bad}, 1, []string{":2", "2AND2"}},
		{[]string{"check", "-dsn", "sqlserver://h?retryExec={1205:3}&connectRetryCount=300"}, 1, []string{"connectRetryCount", "300"}},
		{[]string{"explain", "-exec", "{1205:3,2*2:select,update}", "-querytimeout", "5"}, 0, []string{"1205", "2s", "4s", "8s", "14s", "refused", "select,update"}},
		{[]string{"explain", "-exec", "{1205:0}"}, 0, []string{"never retried"}},
		{[]string{"check", "-exec", "{1205:3,10ms};{1222:2,1.5}"}, 0, []string{`note: rule "{1205:3,10ms}"`, "10ms+0", `note: rule "{1222:2,1.5}"`}},
		{[]string{"frobnicate"}, 2, []string{"usage"}},
		{[]string{"check", "extra"}, 2, []string{"unexpected argument"}},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		all := out.String() + errOut.String()
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, all)
		}
		for _, want := range tc.out {
			if !strings.Contains(all, want) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, want, all)
			}
		}
	}
}

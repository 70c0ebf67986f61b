package crl

import (
	"database/sql/driver"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
)

type funcConnector func()

func (funcConnector) Connect() {}

func TestIsNil(t *testing.T) {
	var nilConnector driver.Connector = (*mssql.Connector)(nil)
	var nilFunc funcConnector
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"nil", nil, true},
		{"nil *mssql.Connector in an interface", nilConnector, true},
		{"nil func", nilFunc, true},
		{"nil map", map[string]int(nil), true},
		{"nil slice", []int(nil), true},
		{"connector", &mssql.Connector{}, false},
		{"struct", struct{}{}, false},
		{"int", 0, false},
		{"func", funcConnector(func() {}), false},
	} {
		assert.Equal(t, tc.want, isNil(tc.v), tc.name)
	}
}

package gormcrl_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/internal/testsupport/usermodule"
)

// The program of a user on GORM with SQL Server, pinned to older
// versions (gorm v1.30.0, gorm.io/driver/sqlserver v1.6.3 and the
// go-mssqldb v1.8.2 it requires), before and after it adds gormcrl.
const (
	userGoMod = `module example.com/orders

go 1.22.0

require (
	github.com/microsoft/go-mssqldb v1.8.2
	gorm.io/driver/sqlserver v1.6.3
	gorm.io/gorm v1.30.0
)
`
	userProgramBefore = `package main

import (
	"fmt"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
)

func main() {
	db, err := gorm.Open(sqlserver.Open("sqlserver://localhost?database=orders"), &gorm.Config{})
	fmt.Println(db != nil, err)
}
`
	userProgramAfter = `package main

import (
	"fmt"

	"github.com/crl-go/crl/gormcrl"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
)

func main() {
	db, err := gorm.Open(gormcrl.Open(sqlserver.Open("sqlserver://localhost?database=orders")), &gorm.Config{})
	fmt.Println(db != nil, err)
}
`
)

// TestUserModuleKeepsItsVersions builds the module graph of a GORM + SQL
// Server program pinned to older versions, then adds gormcrl (a replace
// to this checkout) and checks that GORM, its SQL Server dialector,
// go-mssqldb, golang.org/x/crypto and everything else the program
// selected keep their versions, and that the program's go directive
// (go 1.22.0, crl's lowest Go) is not raised.
func TestUserModuleKeepsItsVersions(t *testing.T) {
	m := usermodule.New(t, "..")
	userSum, err := os.ReadFile(filepath.Join("testdata", "usermodule.go.sum")) // the sums of the program's own versions
	require.NoError(t, err)
	m.SeedSum(string(userSum))

	m.Write("go.mod", userGoMod)
	m.Write("main.go", userProgramBefore)
	m.Go("mod", "tidy")
	before := m.Versions()
	goBefore := usermodule.GoDirective(m.Read("go.mod", false))
	require.Equal(t, "v1.30.0", before["gorm.io/gorm"], "the program's own graph")
	require.Equal(t, "v1.8.2", before["github.com/microsoft/go-mssqldb"], "the program's own graph")

	m.Write("go.mod", userGoMod+m.RequireCrl())
	m.Write("main.go", userProgramAfter)
	m.Go("mod", "tidy")
	m.Go("build", "./...")
	after := m.Versions()

	var moved []string
	for mod, v := range before {
		if after[mod] != v {
			moved = append(moved, mod+" "+v+" → "+after[mod])
		}
	}
	slices.Sort(moved)
	assert.Empty(t, moved, "modules of the program that adding crl moved")
	for _, mod := range []string{"gorm.io/gorm", "gorm.io/driver/sqlserver", "github.com/microsoft/go-mssqldb", "golang.org/x/crypto"} {
		assert.Equal(t, before[mod], after[mod], "%s: adding crl changed its version", mod)
	}
	assert.Equal(t, goBefore, usermodule.GoDirective(m.Read("go.mod", false)),
		"adding crl does not raise the program's go directive (crl's is %s)", usermodule.GoDirective(m.Read("go.mod", true)))
}

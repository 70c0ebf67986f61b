// Command sqlserverapp is the smallest GORM program on SQL Server: it opens
// a DB (without connecting) and prints the registered database/sql drivers.
// Built with -tags withcrl it goes through gormcrl.Open; TestWhatAProgramLinks
// compares the two builds.
package main

import (
	"database/sql"
	"fmt"
	"os"
	"strings"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
)

// wrap is gormcrl.Open in the withcrl build.
var wrap = func(d gorm.Dialector) gorm.Dialector { return d }

func main() {
	d := wrap(sqlserver.Open("sqlserver://127.0.0.1:1?database=shop"))
	if _, err := gorm.Open(d, &gorm.Config{DisableAutomaticPing: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(sql.Drivers(), ","))
}

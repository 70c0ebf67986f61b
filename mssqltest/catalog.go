package mssqltest

import (
	"fmt"

	"github.com/crl-go/crl/internal/tables/mssqlerrors"
)

// serverName is what ERROR tokens name as the server (@@SERVERNAME).
const serverName = "mssqltest"

// session is what error messages may mention about the connection they
// are sent on.
type session struct {
	spid     uint16
	user     string
	database string
}

// errorFor builds the ERROR token content for number on session s: the
// real class, state and message for a number crl's table of SQL Server's
// errors has (internal/tables/mssqlerrors), otherwise class 16, state 1
// and a message that names the number.
func errorFor(number int32, s session) serverError {
	e := serverError{number: number, class: 16, state: 1, server: serverName, line: 1,
		message: fmt.Sprintf("mssqltest: scripted error %d", number)}
	k, ok := mssqlerrors.Lookup(number, mssqlerrors.Session{SPID: s.spid, User: s.user, Database: s.database, Server: serverName})
	if ok {
		e.class, e.state, e.message = k.Class, k.State, k.Message
	}
	return e
}

// Package mssqlerrors is crl's one table of SQL Server's errors as the
// server sends them: the class (severity), state and message of the
// numbers retry rules name. mssqltest answers with them, and crltest
// builds go-mssqldb's mssql.Error from them, so a scripted error and an
// injected one read alike.
package mssqlerrors

import "fmt"

// Session is what a message may mention about the connection it is sent
// on; the real server fills its placeholders from the session.
type Session struct {
	SPID     uint16 // the session's process ID
	User     string // the login's user name
	Database string // the session's database
	Server   string // the server's name (@@SERVERNAME)
}

// Error is what the server sends for an error number: its class
// (severity), state and message.
type Error struct {
	Class   uint8
	State   uint8
	Message string
}

// known is one entry of the table: message fills its placeholders from
// the session.
type known struct {
	class   uint8
	state   uint8
	message func(s Session) string
}

func fixed(msg string) func(Session) string { return func(Session) string { return msg } }

// table lists the numbers retry rules usually name. Classes and states
// are those the servers send; where the documentation disagrees (40501 is
// listed with severity 17 and 20), the value seen on the wire wins.
var table = map[int32]known{
	1204: {19, 4, fixed("The instance of the SQL Server Database Engine cannot obtain a LOCK resource at this time. Rerun your statement when there are fewer active users. Ask the database administrator to check the lock and memory configuration for this instance, or to check for long-running transactions.")},
	1205: {13, 51, func(s Session) string {
		return fmt.Sprintf("Transaction (Process ID %d) was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction.", s.SPID)
	}},
	1222: {16, 56, fixed("Lock request time out period exceeded.")},
	2601: {14, 1, fixed("Cannot insert duplicate key row in object 'dbo.mssqltest' with unique index 'IX_mssqltest'. The duplicate key value is (1).")},
	2627: {14, 1, fixed("Violation of PRIMARY KEY constraint 'PK_mssqltest'. Cannot insert duplicate key in object 'dbo.mssqltest'. The duplicate key value is (1).")},
	3902: {16, 1, fixed("The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION.")},
	3903: {16, 1, fixed("The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION.")},
	3960: {16, 2, func(s Session) string {
		return fmt.Sprintf("Snapshot isolation transaction aborted due to update conflict. You cannot use snapshot isolation to access table 'dbo.mssqltest' directly or indirectly in database '%s' to update, delete, or insert the row that has been modified or deleted by another transaction. Retry the transaction or change the isolation level for the update/delete statement.", s.Database)
	}},
	4060: {11, 1, func(s Session) string {
		return fmt.Sprintf("Cannot open database \"%s\" requested by the login. The login failed.", s.Database)
	}},
	4221:  {16, 1, fixed("Login to read-secondary failed due to long wait on 'HADR_DATABASE_WAIT_FOR_TRANSITION_TO_VERSIONING'. The replica is not available for login because row versions are missing for transactions that were in-flight when the replica was recycled. The issue can be resolved by rolling back or committing the active transactions on the primary replica. Occurrences of this condition can be minimized by avoiding long write transactions on the primary.")},
	10928: {16, 1, fixed("Resource ID : 1. The request limit for the database is 30 and has been reached. See 'http://go.microsoft.com/fwlink/?LinkId=267637' for assistance.")},
	10929: {16, 1, fixed("Resource ID : 1. The request limit for the database is 30 and has been reached. However, the server is currently too busy to support requests greater than 30 for this database. See 'http://go.microsoft.com/fwlink/?LinkId=267637' for assistance. Otherwise, please try again later.")},
	18456: {14, 1, func(s Session) string {
		return fmt.Sprintf("Login failed for user '%s'.", s.User)
	}},
	40143: {16, 1, fixed("The service has encountered an error processing your request. Please try again.")},
	40197: {17, 1, fixed("The service has encountered an error processing your request. Please try again. Error code 4815.")},
	40501: {20, 1, fixed("The service is currently busy. Retry the request after 10 seconds. Incident ID: 4A1C2F8D-0F3B-4E53-9A55-6D8B2F1E7C90. Code: 4915648.")},
	40613: {17, 1, func(s Session) string {
		return fmt.Sprintf("Database '%s' on server '%s' is not currently available. Please retry the connection later. If the problem persists, contact customer support, and provide them the session tracing ID of '7E9B3C21-55D4-4C8A-B0F2-1A2B3C4D5E6F'.", s.Database, s.Server)
	}},
	49918: {16, 1, fixed("Cannot process request. Not enough resources to process request. The service is currently busy. Please retry the request later.")},
	49919: {16, 1, fixed("Cannot process create or update request. Too many create or update operations in progress for subscription \"mssqltest\". The service is busy processing multiple create or update requests for your subscription or server. Requests are currently blocked for resource optimization. Query sys.dm_operation_status for pending operations. Wait until pending create or update requests are complete or delete one of your pending requests and retry your request later.")},
	49920: {16, 1, fixed("Cannot process request. Too many operations in progress for subscription \"mssqltest\". The service is busy processing multiple requests for this subscription. Requests are currently blocked for resource optimization. Query sys.dm_operation_status for operation status. Wait until pending requests are complete or delete one of your pending requests and retry your request later.")},
}

// Lookup returns what the server sends for number on session s, its
// placeholders filled; false for a number the table does not have.
func Lookup(number int32, s Session) (Error, bool) {
	k, ok := table[number]
	if !ok {
		return Error{}, false
	}
	return Error{Class: k.class, State: k.state, Message: k.message(s)}, true
}

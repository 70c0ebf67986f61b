package gormcrl

import (
	"context"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/crl-go/crl/config"
)

// NoRetry opts one operation out of every retry of this package:
//
//	db.Clauses(gormcrl.NoRetry).First(&order)
//	db.Clauses(gormcrl.NoRetry).Create(&order)
//
// The operation runs once, as plain GORM runs it, and so do the statements
// GORM runs for it (preloads, associations, hooks): NoRetry gives the
// operation's context crl.WithoutRetry, and db.WithContext(ctx) with
// such a context is the same as the clause. The connection loop still
// applies to new connections. NoRetry builds no SQL.
var NoRetry clause.Expression = noRetry{}

// noRetryClause is the key NoRetry leaves in Statement.Clauses. Clauses are
// built only when their name is in BuildClauses, which this one never is;
// the key survives WithContext and Session, which copy the clauses.
const noRetryClause = "crl:no_retry"

// noRetry is a clause expression that builds nothing. It is deliberately
// not a clause.Interface, so that db.Clauses hands it to ModifyStatement
// instead of adding it to the clauses to build.
type noRetry struct{}

var _ gorm.StatementModifier = noRetry{} // and a clause.Expression: NoRetry's type

// Build writes nothing.
func (noRetry) Build(clause.Builder) {}

// ModifyStatement marks the statement, and tells the plugins registered on
// its DB that their read callbacks have a mark to look for from now on.
func (noRetry) ModifyStatement(stmt *gorm.Statement) {
	stmt.Clauses[noRetryClause] = clause.Clause{}
	if stmt.DB != nil && stmt.DB.Config != nil {
		for _, q := range stmt.DB.Plugins {
			if p, ok := q.(*Plugin); ok {
				p.noRetry.Store(true)
			}
		}
	}
}

// propagateNoRetry reports whether stmt, or the operation it runs for,
// carries NoRetry, or whether its context was given crl.WithoutRetry
// (db.WithContext): NoRetry is that mechanism for one operation. A
// statement that carries the clause gets crl.WithoutRetry on its context
// (stmt.Context is replaced), so that the driver layer runs its
// statements once, and the statements GORM runs for it (preloads,
// associations, hooks) inherit it.
func propagateNoRetry(stmt *gorm.Statement) bool {
	if stmt.Context != nil && config.NoRetry(stmt.Context) {
		return true
	}
	if _, ok := stmt.Clauses[noRetryClause]; ok {
		ctx := stmt.Context
		if ctx == nil {
			ctx = context.Background()
		}
		stmt.Context = config.NoRetryContext(ctx)
		return true
	}
	return false
}

package crlvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"
)

// txKind is the library of a transaction begun by hand; it picks the
// helper the finding names.
type txKind int

const (
	txSQL txKind = iota
	txSqlx
	txSqlxcrl
	txGormTransaction
	txGormBegin
	txEnt
	txBun
	txBunRunInTx
)

// txMessages are the findings, by kind; %[1]s is the handle's expression,
// %[2]s the method.
var txMessages = map[txKind]string{
	txSQL:             "%[1]s.%[2]s begins a transaction that reads a generated value (%[3]s) and then runs another statement: crl's replay of the transaction cannot verify it (a generated ID never comes back the same), so a deadlock after it fails the transaction; use crl.RunInTx(ctx, %[1]s, opts, fn), which re-runs fn on a fresh *sql.Tx",
	txSqlx:            "%[1]s.%[2]s begins a transaction that reads a generated value (%[3]s) and then runs another statement: crl's replay of the transaction cannot verify it (a generated ID never comes back the same), so a deadlock after it fails the transaction; use sqlxcrl.RunInTxx(ctx, %[1]s, opts, fn), which re-runs fn on a fresh *sqlx.Tx",
	txSqlxcrl:         "%[1]s.%[2]s begins a transaction that reads a generated value (%[3]s) and then runs another statement: crl's replay of the transaction cannot verify it (a generated ID never comes back the same), so a deadlock after it fails the transaction; use %[1]s.RunInTx(ctx, opts, fn), which re-runs fn on a fresh *sqlxcrl.Tx",
	txGormTransaction: "%[1]s.Transaction runs the closure once: crl's driver layer replays the transaction only while every answer it saw comes back the same, and GORM reads back the generated ID of every row it creates, so a deadlock after a Create fails the transaction; use gormcrl.Transaction(%[1]s, fn), which re-runs the closure on a fresh transaction",
	txGormBegin:       "%[1]s.Begin starts a transaction that nothing re-runs: crl's driver layer replays it only while every answer it saw comes back the same, and GORM reads back the generated ID of every row it creates, so a deadlock after a Create fails it; put the work between Begin and Commit in gormcrl.Transaction(%[1]s, fn)",
	txEnt:             "%[1]s.%[2]s begins an ent transaction that nothing re-runs: crl's driver layer replays it only while every answer it saw comes back the same, and ent reads back the generated ID of every entity it creates, so a deadlock after a Create fails it; run the unit in crl.Retry(ctx, func(ctx context.Context) error { tx, err := %[1]s.Tx(ctx); …; return tx.Commit() }), which re-runs it whole",
	txBun:             "%[1]s.%[2]s begins a bun transaction that nothing re-runs: crl's driver layer replays it only while every answer it saw comes back the same, and bun reads back the generated key of the rows it inserts, so a deadlock after an insert fails it; run the unit in crl.Retry(ctx, func(ctx context.Context) error { return %[1]s.RunInTx(ctx, opts, fn) }), which re-runs it whole",
	txBunRunInTx:      "%[1]s.RunInTx runs fn once: crl's driver layer replays the transaction only while every answer it saw comes back the same, and bun reads back the generated key of the rows it inserts, so a deadlock after an insert fails it; wrap it: crl.Retry(ctx, func(ctx context.Context) error { return %[1]s.RunInTx(ctx, opts, fn) }), which re-runs it whole",
}

// txBegins are the methods that begin a transaction, by funcID.
var txBegins = map[string]txKind{
	sqlPath + ".DB.Begin":           txSQL,
	sqlPath + ".DB.BeginTx":         txSQL,
	sqlxPath + ".DB.Beginx":         txSqlx,
	sqlxPath + ".DB.BeginTxx":       txSqlx,
	sqlxPath + ".DB.MustBegin":      txSqlx,
	sqlxPath + ".DB.MustBeginTx":    txSqlx,
	sqlxcrlPath + ".DB.Begin":       txSqlxcrl,
	sqlxcrlPath + ".DB.BeginTx":     txSqlxcrl,
	sqlxcrlPath + ".DB.Beginx":      txSqlxcrl,
	sqlxcrlPath + ".DB.BeginTxx":    txSqlxcrl,
	sqlxcrlPath + ".DB.MustBegin":   txSqlxcrl,
	sqlxcrlPath + ".DB.MustBeginTx": txSqlxcrl,
	gormPath + ".DB.Transaction":    txGormTransaction,
	gormPath + ".DB.Begin":          txGormBegin,
	entSQLPath + ".Driver.Tx":       txEnt,
	entSQLPath + ".Driver.BeginTx":  txEnt,
	bunPath + ".DB.Begin":           txBun,
	bunPath + ".DB.BeginTx":         txBun,
	bunPath + ".IDB.BeginTx":        txBun,
	bunPath + ".Conn.BeginTx":       txBun,
	bunPath + ".DB.RunInTx":         txBunRunInTx,
	bunPath + ".IDB.RunInTx":        txBunRunInTx,
	bunPath + ".Conn.RunInTx":       txBunRunInTx,
}

// checkTransactions reports the transactions f begins by hand: called,
// taken as a method value (txn := db.Transaction) or as a method
// expression ((*gorm.DB).Transaction(db, fn)), on the handle itself or on
// a type that embeds it. Those on crl's own types are always reported;
// the others when handles is true.
func checkTransactions(p *pkg, f *ast.File, handles bool) {
	inspectWithStack(f, func(n ast.Node, stack []ast.Node) {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return
		}
		kind, ok := p.txKind(sel)
		if !ok || (!handles && kind != txSqlxcrl) || p.inUnit(stack) {
			return
		}
		recv := receiverExpr(p.info, sel, stack[len(stack)-2])
		if kind == txSQL || kind == txSqlx || kind == txSqlxcrl {
			// The driver layer replays these, and the generated values
			// they read are in the code: only what a replay cannot verify
			// is a finding. An ORM reads them where the code cannot show
			// it, so its transactions are findings whole.
			if what := generatedThenStatement(stack, sel.End()); what != "" {
				p.report(sel.Sel.Pos(), txMessages[kind], recv, sel.Sel.Name, what)
			}
			return
		}
		p.report(sel.Sel.Pos(), txMessages[kind], recv, sel.Sel.Name)
	})
}

// txKind returns the kind of transaction that the method sel names
// begins, if it begins one.
func (p *pkg) txKind(sel *ast.SelectorExpr) (txKind, bool) {
	fn := funcOf(p.info, sel)
	if fn == nil {
		return 0, false
	}
	kind, ok := txBegins[funcID(fn)]
	if !ok {
		return txEnt, isEntClientTx(fn)
	}
	if kind != txSQL {
		return kind, true
	}
	// database/sql's Begin promoted through a handle that embeds *sql.DB:
	// the fix is that handle's helper.
	if s, ok := p.info.Selections[sel]; ok {
		switch t := s.Recv(); {
		case isNamed(t, sqlxcrlPath, "DB"):
			return txSqlxcrl, true
		case isNamed(t, sqlxPath, "DB"):
			return txSqlx, true
		case isNamed(t, bunPath, "DB"):
			return txBun, true
		}
	}
	return txSQL, true
}

// isEntClientTx reports whether fn is the Tx or BeginTx method of an ent
// generated client: a *Client method whose first result is a *Tx of the
// same package that has Commit, Rollback and Client.
func isEntClientTx(fn *types.Func) bool {
	if fn.Name() != "Tx" && fn.Name() != "BeginTx" {
		return false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil || sig.Results().Len() != 2 {
		return false
	}
	client, tx := namedOf(sig.Recv().Type()), namedOf(sig.Results().At(0).Type())
	if client == nil || tx == nil || client.Obj().Name() != "Client" || tx.Obj().Name() != "Tx" || tx.Obj().Pkg() != fn.Pkg() {
		return false
	}
	methods := types.NewMethodSet(types.NewPointer(tx))
	for _, name := range []string{"Commit", "Rollback", "Client"} {
		if methods.Lookup(fn.Pkg(), name) == nil {
			return false
		}
	}
	return true
}

// statementMethods are the methods that run a statement, on any handle.
var statementMethods = map[string]bool{
	"Exec": true, "ExecContext": true, "Query": true, "QueryContext": true, "QueryRow": true, "QueryRowContext": true,
	"Get": true, "GetContext": true, "Select": true, "SelectContext": true, "NamedExec": true, "NamedExecContext": true,
	"Queryx": true, "QueryxContext": true, "QueryRowx": true, "QueryRowxContext": true, "MustExec": true, "MustExecContext": true,
}

// generatedThenStatement returns what reads a generated value in the
// function around stack's top, after from — a LastInsertId call, or a
// statement whose text returns the inserted row (RETURNING, OUTPUT
// INSERTED) — when a statement runs after it; "" otherwise.
func generatedThenStatement(stack []ast.Node, from token.Pos) string {
	body := enclosingBody(stack)
	if body == nil {
		return ""
	}
	var r generatedRead
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && call.Pos() >= from {
			r.see(call)
		}
		return true
	})
	if r.what != "" && r.at == token.NoPos {
		return r.what
	}
	return ""
}

// generatedRead follows the calls of a function in source order for
// generatedThenStatement: what read a generated value first ("" until
// one did), and where that read ends (token.NoPos once a statement ran
// after it).
type generatedRead struct {
	what string
	at   token.Pos
}

// see notes call: the read, or a statement after it.
func (r *generatedRead) see(call *ast.CallExpr) {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return
	}
	switch {
	case r.what == "" && sel.Sel.Name == "LastInsertId":
		r.what, r.at = "LastInsertId", call.End()
	case r.what == "" && statementMethods[sel.Sel.Name] && returnsInserted(call):
		r.what, r.at = sel.Sel.Name+" … RETURNING", call.End()
	case r.what != "" && r.at != token.NoPos && call.Pos() > r.at && statementMethods[sel.Sel.Name]:
		r.at = token.NoPos // found: a statement after the read
	}
}

// enclosingBody returns the body of the innermost function in stack.
func enclosingBody(stack []ast.Node) *ast.BlockStmt {
	for i := len(stack) - 1; i >= 0; i-- {
		switch f := stack[i].(type) {
		case *ast.FuncDecl:
			return f.Body
		case *ast.FuncLit:
			return f.Body
		}
	}
	return nil
}

// returnsInserted reports a call with a string literal argument whose
// statement hands back the rows it inserted.
func returnsInserted(call *ast.CallExpr) bool {
	for _, a := range call.Args {
		lit, ok := ast.Unparen(a).(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		up := strings.ToUpper(lit.Value)
		if strings.Contains(up, "INSERT") && (strings.Contains(up, "RETURNING") || strings.Contains(up, "OUTPUT INSERTED")) {
			return true
		}
	}
	return false
}

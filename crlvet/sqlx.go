package crlvet

import (
	"go/ast"
	"go/types"
	"strings"
)

// embeddedHandles are the embedded sqlx handles of sqlxcrl's types, by
// field name, with what is lost when code takes one out.
var embeddedHandles = map[string]string{
	"DB":        "the embedded *sqlx.DB of a *sqlxcrl.DB: its Get and Select lose sqlxcrl's whole-result retry, and over a pool crl did not open (NewDb of a sql.Open pool) none of its statements is retried; pass the *sqlxcrl.DB itself (it satisfies sqlx.ExtContext), or open the pool with crl.Open and use sqlx's own types",
	"Tx":        "the embedded *sqlx.Tx of a *sqlxcrl.Tx: over a pool crl did not open, a statement that fails on it is not recorded, so RunInTx checks the rule's query filter against the wrong statement; pass the *sqlxcrl.Tx itself (it satisfies sqlx.ExtContext)",
	"Stmt":      "the embedded *sqlx.Stmt of a *sqlxcrl.Stmt: its Get and Select lose sqlxcrl's whole-result retry, and over a pool crl did not open its executions are not retried; use the *sqlxcrl.Stmt itself",
	"NamedStmt": "the embedded *sqlx.NamedStmt of a *sqlxcrl.NamedStmt: its Get and Select lose sqlxcrl's whole-result retry, and over a pool crl did not open its executions are not retried; use the *sqlxcrl.NamedStmt itself",
}

// rewraps are the functions that take the *sql.DB out of a sqlxcrl handle
// to put it under crl again (sqlxcrl.NewDb(db.DB.DB, name)), or to run
// nothing on it.
var rewraps = map[string]bool{
	sqlxcrlPath + ".NewDb":  true,
	sqlxcrlPath + ".WrapDB": true,
	crlPath + ".RunInTx":    true,
	crlPath + ".RuntimeOf":  true,
}

// checkSqlx reports every place in f that takes the embedded sqlx handle
// out of a sqlxcrl handle other than to call a method that runs no
// statement (db.DB.Stats(), db.DB.SetMaxOpenConns(…)), to read a field,
// or to wrap it again.
func checkSqlx(p *pkg, f *ast.File) {
	inspectWithStack(f, func(n ast.Node, stack []ast.Node) {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return
		}
		what, ok := embeddedHandle(p.info, sel)
		if !ok || harmlessUse(p.info, stack) {
			return
		}
		p.report(sel.Sel.Pos(), "%s is %s", types.ExprString(sel), what)
	})
}

// embeddedHandle reports whether sel takes the embedded sqlx handle out of
// a sqlxcrl type, and which.
func embeddedHandle(info *types.Info, sel *ast.SelectorExpr) (string, bool) {
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.FieldVal {
		return "", false
	}
	v, ok := s.Obj().(*types.Var)
	if !ok || !v.Embedded() {
		return "", false
	}
	what, ok := embeddedHandles[v.Name()]
	if !ok || !isNamed(s.Recv(), sqlxcrlPath, "") {
		return "", false
	}
	return what, true
}

// harmlessUse reports whether the selector on top of stack is only the
// receiver of a method that runs no statement, or of a field: db.DB.Stats(),
// db.DB.SetMaxOpenConns(10), db.DB.Mapper; or the *sql.DB given to a
// function that wraps it again (sqlxcrl.NewDb(db.DB.DB, name)). Going
// through db.DB.DB (the *sql.DB), or through a method that returns another
// handle (db.DB.Unsafe()), is looked at the same way.
func harmlessUse(info *types.Info, stack []ast.Node) bool {
	for i := len(stack) - 1; i > 0; {
		next, verdict := useStep(info, stack, i)
		if next < 0 {
			return verdict
		}
		i = next
	}
	return false
}

// useStep judges the use of stack[i]: it returns the index of the node
// to judge next (the enclosing expression that stands for the same
// handle), or -1 and the verdict.
func useStep(info *types.Info, stack []ast.Node, i int) (int, bool) {
	parent, ok := stack[i-1].(*ast.SelectorExpr)
	if !ok || parent.X != stack[i] {
		call, ok := stack[i-1].(*ast.CallExpr)
		return -1, ok && isArg(call, stack[i].(ast.Expr)) && rewraps[funcID(funcOf(info, call.Fun))]
	}
	s, ok := info.Selections[parent]
	if !ok {
		return -1, false
	}
	switch s.Kind() {
	case types.MethodVal:
		return methodStep(stack, i, parent, s)
	case types.FieldVal:
		if v, ok := s.Obj().(*types.Var); ok && v.Embedded() && v.Name() == "DB" {
			return i - 1, false // db.DB.DB: the *sql.DB inside, judged by its own use
		}
		return -1, true // a field such as Mapper
	}
	return -1, false
}

// methodStep is useStep for a handle that is the receiver of a method
// (parent): a method that runs a statement loses the retries; one that
// returns another handle passes the judgement on to the call's use.
func methodStep(stack []ast.Node, i int, parent *ast.SelectorExpr, s *types.Selection) (int, bool) {
	if runsStatement(parent.Sel.Name) {
		return -1, false
	}
	if i >= 2 && returnsHandle(s.Obj()) {
		if call, ok := stack[i-2].(*ast.CallExpr); ok && call.Fun == parent {
			return i - 2, false // db.DB.Unsafe().SelectContext(…): judged by the call's use
		}
	}
	return -1, true
}

// returnsHandle reports whether the method obj returns a handle of sqlx or
// database/sql (sqlx's Unsafe, database/sql's Driver does not).
func returnsHandle(obj types.Object) bool {
	sig, ok := obj.Type().(*types.Signature)
	if !ok || sig.Results().Len() == 0 {
		return false
	}
	t := sig.Results().At(0).Type()
	return isNamed(t, sqlxPath, "") || isNamed(t, sqlPath, "DB") || isNamed(t, sqlPath, "Tx") || isNamed(t, sqlPath, "Conn")
}

// runsStatement tells the methods of sqlx's and database/sql's handles that
// run SQL or hand out something that does.
func runsStatement(name string) bool {
	for _, prefix := range []string{"Exec", "Query", "Get", "Select", "Named", "Prepare", "Preparex", "Begin", "MustExec", "MustBegin", "Conn", "Stmt"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// sqlxLosesHandle are the sqlx package functions that, given a sqlxcrl
// handle, read its Mapper or Unsafe with a type switch over sqlx's own
// types, which no wrapper matches: they bind or scan with sqlx's defaults,
// and Preparex's statement is a plain *sqlx.Stmt, whose executions are not
// retried. The handles' own methods do it right.
var sqlxLosesHandle = map[string]string{
	"NamedExec":           "binds with sqlx's default Mapper, not the handle's",
	"NamedExecContext":    "binds with sqlx's default Mapper, not the handle's",
	"NamedQuery":          "binds with sqlx's default Mapper, not the handle's",
	"NamedQueryContext":   "binds with sqlx's default Mapper, not the handle's",
	"Preparex":            "loses the handle's Mapper and Unsafe, and its statement's executions are not retried",
	"PreparexContext":     "loses the handle's Mapper and Unsafe, and its statement's executions are not retried",
	"PrepareNamed":        "loses the handle's Mapper, and its statement's executions are not retried",
	"PrepareNamedContext": "loses the handle's Mapper, and its statement's executions are not retried",
}

// checkSqlxPackageCalls reports calls of sqlxLosesHandle's functions whose
// handle argument (the first, or the one after the context) is a sqlxcrl
// handle (*DB or *Tx).
func checkSqlxPackageCalls(p *pkg, f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		fn := funcOf(p.info, call.Fun)
		if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != sqlxPath || fn.Type().(*types.Signature).Recv() != nil {
			return true
		}
		lost, ok := sqlxLosesHandle[fn.Name()]
		i := 0
		if strings.HasSuffix(fn.Name(), "Context") {
			i = 1
		}
		if !ok || len(call.Args) <= i {
			return true
		}
		arg := call.Args[i]
		if tv, ok := p.info.Types[arg]; ok && (isNamed(tv.Type, sqlxcrlPath, "DB") || isNamed(tv.Type, sqlxcrlPath, "Tx")) {
			p.report(call.Pos(), "sqlx.%s given a sqlxcrl handle %s; call %s.%s(…) instead",
				fn.Name(), lost, types.ExprString(arg), fn.Name())
		}
		return true
	})
}

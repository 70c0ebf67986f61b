package crlvet

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// embeddedHandles are the embedded sqlx handles of sqlxcrl's types, by
// field name, with what is lost when code takes one out.
var embeddedHandles = map[string]string{
	"DB":        "the embedded *sqlx.DB of a *sqlxcrl.DB: statements run on it are not retried; pass the *sqlxcrl.DB itself (it satisfies sqlx.ExtContext)",
	"Tx":        "the embedded *sqlx.Tx of a *sqlxcrl.Tx: a statement that fails on it is not recorded, so RunInTx checks the rule's query filter against the wrong statement; pass the *sqlxcrl.Tx itself (it satisfies sqlx.ExtContext)",
	"Stmt":      "the embedded *sqlx.Stmt of a *sqlxcrl.Stmt: its executions are not retried; use the *sqlxcrl.Stmt itself",
	"NamedStmt": "the embedded *sqlx.NamedStmt of a *sqlxcrl.NamedStmt: its executions are not retried; use the *sqlxcrl.NamedStmt itself",
}

// checkSqlx reports every place in f that takes the embedded sqlx handle
// out of a sqlxcrl handle other than to call a method that runs no
// statement (db.DB.Stats(), db.DB.SetMaxOpenConns(…)) or to read a field.
func checkSqlx(pass *analysis.Pass, f *ast.File) {
	inspectWithStack(f, func(n ast.Node, stack []ast.Node) {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return
		}
		what, ok := embeddedHandle(pass.TypesInfo, sel)
		if !ok || harmlessUse(pass.TypesInfo, stack) {
			return
		}
		pass.Reportf(sel.Sel.Pos(), "%s is %s", types.ExprString(sel), what)
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
// db.DB.SetMaxOpenConns(10), db.DB.Mapper. Going through db.DB.DB (the
// *sql.DB) is looked at the same way.
func harmlessUse(info *types.Info, stack []ast.Node) bool {
	for i := len(stack) - 1; i > 0; {
		parent, ok := stack[i-1].(*ast.SelectorExpr)
		if !ok || parent.X != stack[i] {
			return false // used as a value: an argument, an assignment, a return
		}
		s, ok := info.Selections[parent]
		if !ok {
			return false
		}
		switch s.Kind() {
		case types.MethodVal:
			return !runsStatement(parent.Sel.Name)
		case types.FieldVal:
			if v, ok := s.Obj().(*types.Var); ok && v.Embedded() && v.Name() == "DB" {
				i-- // db.DB.DB: the *sql.DB inside, judged by its own use
				continue
			}
			return true // a field such as Mapper
		}
		return false
	}
	return false
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

// isNamed reports whether t, or what it points to, is a named type of the
// package path, called name ("" for any name).
func isNamed(t types.Type, path, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	obj := named.Obj()
	return obj.Pkg() != nil && obj.Pkg().Path() == path && (name == "" || obj.Name() == name)
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
func checkSqlxPackageCalls(pass *analysis.Pass, f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		fn, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Func)
		if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "github.com/jmoiron/sqlx" {
			return true
		}
		lost, ok := sqlxLosesHandle[fn.Name()]
		if !ok {
			return true
		}
		i := 0
		if strings.HasSuffix(fn.Name(), "Context") {
			i = 1
		}
		if len(call.Args) <= i {
			return true
		}
		arg := call.Args[i]
		if tv, ok := pass.TypesInfo.Types[arg]; ok && (isNamed(tv.Type, sqlxcrlPath, "DB") || isNamed(tv.Type, sqlxcrlPath, "Tx")) {
			pass.Reportf(call.Pos(), "sqlx.%s given a sqlxcrl handle %s; call %s.%s(…) instead",
				fn.Name(), lost, types.ExprString(arg), fn.Name())
		}
		return true
	})
}

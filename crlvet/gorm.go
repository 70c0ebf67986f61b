package crlvet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// The messages of the GORM checks; %s is the *gorm.DB expression.
const (
	msgTransaction = "%s.Transaction runs the closure once: GORM retries no statement inside a transaction and nothing re-runs the transaction, so gormcrl's retries are lost; use gormcrl.Transaction(%s, fn), which re-runs the closure on a fresh transaction"
	msgBegin       = "%s.Begin starts a transaction that nothing re-runs and whose statements are not retried, so gormcrl's retries are lost; put the work between Begin and Commit in gormcrl.Transaction(%s, fn)"
	msgConnPool    = "%s.ConnPool is the pool under GORM without gormcrl's statement loop: statements run on it are not retried; run them through the *gorm.DB (%s.Exec, %s.Raw(...).Scan), or gormcrl.Transaction(%s, fn) for a transaction"
	msgSQLDB       = "%s runs on the *sql.DB of %s.DB(), outside GORM: it is not retried; run it through the *gorm.DB (%s.Exec, %s.Raw(...).Scan), gormcrl.Transaction(%s, fn) for a transaction, or wrap the *sql.DB with sqlxcrl.NewDb"
)

// isGormDB reports whether t is gorm.DB or a pointer to it.
func isGormDB(t types.Type) bool { return isNamed(t, gormPath, "DB") }

// gormMethod returns the name of the *gorm.DB method that call calls, and
// the receiver's expression.
func gormMethod(info *types.Info, call *ast.CallExpr) (string, ast.Expr, bool) {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return "", nil, false
	}
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.MethodVal || !isGormDB(s.Recv()) {
		return "", nil, false
	}
	return sel.Sel.Name, sel.X, true
}

// checkGorm reports db.Transaction, db.Begin and db.ConnPool in f.
func checkGorm(pass *analysis.Pass, f *ast.File) {
	info := pass.TypesInfo
	inspectWithStack(f, func(n ast.Node, stack []ast.Node) {
		switch n := n.(type) {
		case *ast.CallExpr:
			name, recv, ok := gormMethod(info, n)
			if !ok || (name != "Transaction" && name != "Begin") || inRetriedClosure(info, stack) {
				return
			}
			x := types.ExprString(recv)
			if name == "Transaction" {
				pass.Reportf(n.Fun.(*ast.SelectorExpr).Sel.Pos(), msgTransaction, x, x)
			} else {
				pass.Reportf(n.Fun.(*ast.SelectorExpr).Sel.Pos(), msgBegin, x, x)
			}
		case *ast.SelectorExpr:
			s, ok := info.Selections[n]
			if !ok || s.Kind() != types.FieldVal || n.Sel.Name != "ConnPool" || !isGormDB(s.Recv()) || assignedTo(n, stack) {
				return
			}
			x := types.ExprString(n.X)
			pass.Reportf(n.Sel.Pos(), msgConnPool, x, x, x, x)
		}
	})
}

// inRetriedClosure reports whether the call on top of stack is inside a
// closure passed to gormcrl.Transaction (retried as a whole) or to
// (*gorm.DB).Transaction (reported itself): there a Transaction is a
// savepoint of the enclosing transaction.
func inRetriedClosure(info *types.Info, stack []ast.Node) bool {
	for i := len(stack) - 2; i > 0; i-- {
		lit, ok := stack[i].(*ast.FuncLit)
		if !ok {
			continue
		}
		call, ok := stack[i-1].(*ast.CallExpr)
		if !ok || !isArg(call, lit) {
			continue
		}
		if name, _, ok := gormMethod(info, call); ok && name == "Transaction" {
			return true
		}
		if isFunc(info, call, gormcrlPath, "Transaction") {
			return true
		}
	}
	return false
}

func isArg(call *ast.CallExpr, e ast.Expr) bool {
	for _, a := range call.Args {
		if ast.Unparen(a) == e {
			return true
		}
	}
	return false
}

// isFunc reports whether call calls the function path.name.
func isFunc(info *types.Info, call *ast.CallExpr, path, name string) bool {
	var id *ast.Ident
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = fun
	case *ast.SelectorExpr:
		id = fun.Sel
	default:
		return false
	}
	fn, ok := info.Uses[id].(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == path && fn.Name() == name
}

// assignedTo reports whether the selector on top of stack is assigned to
// (db.ConnPool = pool), which takes nothing out.
func assignedTo(sel *ast.SelectorExpr, stack []ast.Node) bool {
	if len(stack) < 2 {
		return false
	}
	as, ok := stack[len(stack)-2].(*ast.AssignStmt)
	if !ok {
		return false
	}
	for _, l := range as.Lhs {
		if ast.Unparen(l) == sel {
			return true
		}
	}
	return false
}

// checkGormSQLDB reports the statements run on a *sql.DB that a variable
// of the package got from (*gorm.DB).DB(): sqlDB, err := db.DB(), then
// sqlDB.Exec(…). Methods that run no statement (SetMaxOpenConns, Stats,
// Ping, Close) are not reported.
func checkGormSQLDB(pass *analysis.Pass) {
	info := pass.TypesInfo
	from := map[types.Object]string{} // the variable, and the *gorm.DB it came from
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			var lhs, rhs []ast.Expr
			switch n := n.(type) {
			case *ast.AssignStmt:
				lhs, rhs = n.Lhs, n.Rhs
			case *ast.ValueSpec:
				for _, name := range n.Names {
					lhs = append(lhs, name)
				}
				rhs = n.Values
			default:
				return true
			}
			if len(rhs) != 1 || len(lhs) == 0 {
				return true
			}
			call, ok := ast.Unparen(rhs[0]).(*ast.CallExpr)
			if !ok {
				return true
			}
			name, recv, ok := gormMethod(info, call)
			if !ok || name != "DB" {
				return true
			}
			if id, ok := ast.Unparen(lhs[0]).(*ast.Ident); ok && id.Name != "_" {
				if obj := objectOf(info, id); obj != nil {
					from[obj] = types.ExprString(recv)
				}
			}
			return true
		})
	}
	if len(from) == 0 {
		return
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := ast.Unparen(sel.X).(*ast.Ident)
			if !ok {
				return true
			}
			db, ok := from[info.Uses[id]]
			if !ok {
				return true
			}
			if s, ok := info.Selections[sel]; ok && s.Kind() == types.MethodVal && runsStatement(sel.Sel.Name) {
				pass.Reportf(sel.Sel.Pos(), msgSQLDB, types.ExprString(sel), db, db, db, db)
			}
			return true
		})
	}
}

// objectOf returns the variable id declares or assigns.
func objectOf(info *types.Info, id *ast.Ident) types.Object {
	if obj := info.Defs[id]; obj != nil {
		return obj
	}
	return info.Uses[id]
}

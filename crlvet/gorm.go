package crlvet

import (
	"go/ast"
	"go/types"
	"strings"
)

// The messages of the GORM checks of handles; %s is the *gorm.DB expression.
const (
	msgConnPool = "%s.ConnPool is the pool under GORM without gormcrl's statement loop: statements run on it lose its whole-statement retry, and over a pool crl did not open they are not retried at all; run them through the *gorm.DB (%s.Exec, %s.Raw(...).Scan), or gormcrl.Transaction(%s, fn) for a transaction"
	msgSQLDB    = "%s runs on the *sql.DB of %s.DB(), outside GORM: it is not retried; run it through the *gorm.DB (%s.Exec, %s.Raw(...).Scan), gormcrl.Transaction(%s, fn) for a transaction, or wrap the *sql.DB with sqlxcrl.NewDb"
)

// gormMethod returns the name of the *gorm.DB method that call calls (on
// a *gorm.DB or on a type that embeds one), and the receiver's expression.
func gormMethod(info *types.Info, call *ast.CallExpr) (string, ast.Expr, bool) {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return "", nil, false
	}
	fn := funcOf(info, sel)
	if fn == nil || funcID(fn) != gormPath+".DB."+fn.Name() {
		return "", nil, false
	}
	return fn.Name(), sel.X, true
}

// checkGormConnPool reports db.ConnPool taken out of a *gorm.DB (or out
// of a type that embeds one) in f.
func checkGormConnPool(p *pkg, f *ast.File) {
	inspectWithStack(f, func(n ast.Node, stack []ast.Node) {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "ConnPool" || !isGormDBConnPool(p.info, sel) || assignedTo(sel, stack) {
			return
		}
		x := types.ExprString(sel.X)
		p.report(sel.Sel.Pos(), msgConnPool, x, x, x, x)
	})
}

// isGormDBConnPool reports whether sel selects the ConnPool field that a
// *gorm.DB has (from its *gorm.Config), not a Statement's.
func isGormDBConnPool(info *types.Info, sel *ast.SelectorExpr) bool {
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.FieldVal || s.Obj().Pkg() == nil || s.Obj().Pkg().Path() != gormPath {
		return false
	}
	db := s.Obj().Pkg().Scope().Lookup("DB")
	if db == nil {
		return false
	}
	field, _, _ := types.LookupFieldOrMethod(types.NewPointer(db.Type()), true, s.Obj().Pkg(), "ConnPool")
	return field == s.Obj()
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
func checkGormSQLDB(p *pkg) {
	from := map[types.Object]string{} // the variable, and the *gorm.DB it came from
	for _, f := range p.pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if obj, db, ok := gormSQLDBVar(p.info, n); ok {
				from[obj] = db
			}
			return true
		})
	}
	if len(from) == 0 {
		return
	}
	for _, f := range p.pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				reportSQLDBUse(p, sel, from)
			}
			return true
		})
	}
}

// gormSQLDBVar returns the variable that n (an assignment or a var
// declaration) sets to db.DB(), and db's expression.
func gormSQLDBVar(info *types.Info, n ast.Node) (types.Object, string, bool) {
	var lhs, rhs []ast.Expr
	switch n := n.(type) {
	case *ast.AssignStmt:
		lhs, rhs = n.Lhs, n.Rhs
	case *ast.ValueSpec:
		for _, name := range n.Names {
			lhs = append(lhs, name)
		}
		rhs = n.Values
	}
	if len(rhs) != 1 || len(lhs) == 0 {
		return nil, "", false
	}
	call, ok := ast.Unparen(rhs[0]).(*ast.CallExpr)
	if !ok {
		return nil, "", false
	}
	if name, recv, ok := gormMethod(info, call); !ok || name != "DB" {
		return nil, "", false
	} else if id, ok := ast.Unparen(lhs[0]).(*ast.Ident); ok && id.Name != "_" {
		obj := objectOf(info, id)
		return obj, types.ExprString(recv), obj != nil
	}
	return nil, "", false
}

// reportSQLDBUse reports sel when it runs a statement on a variable of
// from.
func reportSQLDBUse(p *pkg, sel *ast.SelectorExpr, from map[types.Object]string) {
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return
	}
	db, ok := from[p.info.Uses[id]]
	if !ok {
		return
	}
	if strings.HasPrefix(sel.Sel.Name, "Begin") {
		return // a transaction: checkTransactions names its helper
	}
	if s, ok := p.info.Selections[sel]; ok && s.Kind() == types.MethodVal && runsStatement(sel.Sel.Name) {
		p.report(sel.Sel.Pos(), msgSQLDB, types.ExprString(sel), db, db, db, db)
	}
}

// objectOf returns the variable id declares or assigns.
func objectOf(info *types.Info, id *ast.Ident) types.Object {
	if obj := info.Defs[id]; obj != nil {
		return obj
	}
	return info.Uses[id]
}

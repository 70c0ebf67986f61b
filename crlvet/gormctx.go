package crlvet

import (
	"go/ast"
	"go/token"
	"go/types"
)

// msgGormContext is the finding of a GORM call inside crl.Retry's
// function that does not carry the unit's context; %[1]s is the
// *gorm.DB expression, %[2]s the method.
const msgGormContext = "%[1]s.%[2]s inside crl.Retry's function runs without its context (%[1]s, not %[1]s.WithContext(ctx)): crl records nothing of it in the unit, so the unit retries nothing; write %[1]s.WithContext(ctx).%[2]s, or run the work in gormcrl.Transaction(%[1]s.WithContext(ctx), fn), which works on any pool"

// gormRuns are the *gorm.DB methods that run a statement or begin a
// transaction; the others build a statement or set options.
var gormRuns = map[string]bool{
	"Create": true, "CreateInBatches": true, "Save": true, "First": true, "Take": true, "Last": true,
	"Find": true, "FindInBatches": true, "FirstOrInit": true, "FirstOrCreate": true, "Update": true,
	"Updates": true, "UpdateColumn": true, "UpdateColumns": true, "Delete": true, "Count": true,
	"Row": true, "Rows": true, "Scan": true, "Pluck": true, "Exec": true, "Begin": true, "Transaction": true,
}

// checkGormContext reports, in the functions that crl.Retry runs (and the
// functions of the package they call), GORM calls on a *gorm.DB from
// outside the function that no WithContext gave a context: GORM runs
// them under context.Background, which carries no unit, so crl.Retry
// retries nothing. A *gorm.DB that the function declares (a transaction's
// tx, db.WithContext(ctx) kept in a variable) or takes as a parameter
// (the caller may have given it the context) is trusted.
func checkGormContext(p *pkg) {
	work, begun := p.retryBodies()
	seen := map[ast.Node]bool{}
	for _, n := range work {
		seen[n] = true
	}
	for len(work) > 0 {
		body := work[len(work)-1]
		work = work[:len(work)-1]
		ast.Inspect(body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if d, ok := p.decls[originOf(funcOf(p.info, call.Fun))]; ok && !seen[d] {
				seen[d] = true
				work = append(work, d)
			}
			p.reportGormWithoutContext(body, call, begun)
			return true
		})
	}
}

// retryBodies returns the functions that crl.Retry calls run, each once,
// and what the package sets to a Begin's transaction (m.tx = m.db.Begin():
// its Begin is the finding, not each statement on m.tx).
func (p *pkg) retryBodies() ([]ast.Node, map[string]bool) {
	var bodies []ast.Node
	seen := map[ast.Node]bool{}
	begun := map[string]bool{}
	for _, f := range p.pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if lhs, ok := p.begunBy(n); ok {
					begun[lhs] = true
				}
			case *ast.CallExpr:
				if h, fn, ok := p.helperCall(n); ok && h.name == "crl.Retry" {
					if body := p.bodyOf(fn); body != nil && !seen[body] {
						seen[body] = true
						bodies = append(bodies, body)
					}
				}
			}
			return true
		})
	}
	return bodies, begun
}

// begunBy returns what as sets to a GORM Begin's transaction, if it does.
func (p *pkg) begunBy(as *ast.AssignStmt) (string, bool) {
	if len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return "", false
	}
	c, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
	if !ok {
		return "", false
	}
	m, _, ok := gormMethod(p.info, c)
	return types.ExprString(as.Lhs[0]), ok && m == "Begin"
}

// reportGormWithoutContext reports call, in body, when it runs a
// statement on a *gorm.DB from outside body whose chain has no
// WithContext, but not on a transaction that a Begin set (begun: the
// Begin is reported).
func (p *pkg) reportGormWithoutContext(body ast.Node, call *ast.CallExpr, begun map[string]bool) {
	name, recv, ok := gormMethod(p.info, call)
	if !ok || !gormRuns[name] || begun[types.ExprString(recv)] {
		return
	}
	for e := recv; ; {
		switch x := ast.Unparen(e).(type) {
		case *ast.CallExpr:
			m, r, ok := gormMethod(p.info, x)
			if !ok || m == "WithContext" {
				return // a context, or a *gorm.DB some other call made
			}
			e = r
			continue
		case *ast.Ident:
			if !p.fromOutside(body, x, false) {
				return
			}
		case *ast.SelectorExpr:
			root, ok := ast.Unparen(x.X).(*ast.Ident)
			if !ok || !p.fromOutside(body, root, true) {
				return
			}
		default:
			return
		}
		p.report(call.Pos(), msgGormContext, types.ExprString(recv), name)
		return
	}
}

// fromOutside reports whether id names a variable declared outside body:
// captured by a literal, a package variable, or (field true: a field of
// it, m.db) the receiver or a parameter of a function body. A parameter
// that is itself the *gorm.DB is trusted: its caller may have given it
// the context.
func (p *pkg) fromOutside(body ast.Node, id *ast.Ident, field bool) bool {
	v, ok := p.info.Uses[id].(*types.Var)
	if !ok {
		return false
	}
	inner := body
	if d, ok := body.(*ast.FuncDecl); ok {
		inner = d.Body
		if within(d, v.Pos()) && !within(d.Body, v.Pos()) {
			return field // the receiver or a parameter
		}
	}
	return !within(inner, v.Pos())
}

func within(n ast.Node, pos token.Pos) bool { return n.Pos() <= pos && pos < n.End() }

package crlvet

import (
	"go/ast"
	"go/types"
)

// unitHelper is a function that runs a closure as one transaction or unit
// of work.
type unitHelper struct {
	name  string // as the messages name it
	fnArg int    // the closure's index among the call's arguments
	// txParam: the closure's first parameter is the transaction, which the
	// helper commits or rolls back itself.
	txParam bool
	// retried: the helper re-runs the closure on an error (crl's), so
	// the closure must be safe to run again; otherwise it runs it once
	// (GORM's and bun's, reported as transactions without a retry).
	retried bool
}

// unitHelpers are the helpers, by funcID.
var unitHelpers = map[string]unitHelper{
	crlPath + ".RunInTx":         {name: "crl.RunInTx", fnArg: 3, txParam: true, retried: true},
	crlPath + ".Retry":           {name: "crl.Retry", fnArg: 1, retried: true},
	sqlxcrlPath + ".RunInTxx":    {name: "sqlxcrl.RunInTxx", fnArg: 3, txParam: true, retried: true},
	sqlxcrlPath + ".DB.RunInTx":  {name: "RunInTx", fnArg: 2, txParam: true, retried: true},
	gormcrlPath + ".Transaction": {name: "gormcrl.Transaction", fnArg: 1, txParam: true, retried: true},
	corePath + ".Retrier.DoTx":   {name: "DoTx", fnArg: 1, retried: true},
	corePath + ".Retrier.Run":    {name: "Run", fnArg: 2, retried: true},
	gormPath + ".DB.Transaction": {name: "Transaction", fnArg: 0, txParam: true},
	bunPath + ".DB.RunInTx":      {name: "RunInTx", fnArg: 2, txParam: true},
	bunPath + ".IDB.RunInTx":     {name: "RunInTx", fnArg: 2, txParam: true},
	bunPath + ".Tx.RunInTx":      {name: "RunInTx", fnArg: 2, txParam: true},
	bunPath + ".Conn.RunInTx":    {name: "RunInTx", fnArg: 2, txParam: true},
}

// helperCall returns the helper that call calls and the closure it gives
// it.
func (p *pkg) helperCall(call *ast.CallExpr) (unitHelper, ast.Expr, bool) {
	h, ok := unitHelpers[funcID(funcOf(p.info, call.Fun))]
	if !ok {
		return unitHelper{}, nil, false
	}
	i := h.fnArg
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		if s, ok := p.info.Selections[sel]; ok && s.Kind() == types.MethodExpr {
			i++ // (*sqlxcrl.DB).RunInTx(db, ctx, opts, fn)
		}
	}
	if i >= len(call.Args) {
		return unitHelper{}, nil, false
	}
	return h, call.Args[i], true
}

// bodyOf returns the function that e gives: a literal, or a function or
// method of this package named (f, s.work), as *ast.FuncLit or
// *ast.FuncDecl; nil for anything else.
func (p *pkg) bodyOf(e ast.Expr) ast.Node {
	if lit, ok := ast.Unparen(e).(*ast.FuncLit); ok {
		return lit
	}
	if fn := funcOf(p.info, e); fn != nil {
		if d, ok := p.decls[fn.Origin()]; ok {
			return d
		}
	}
	return nil
}

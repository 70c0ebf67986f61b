package crlvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"
)

// checkClosures reports, in the closures that f gives crl's retry
// helpers, what makes a closure unsafe to run again.
func checkClosures(p *pkg, f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		h, fn, ok := p.helperCall(call)
		if !ok || !h.retried {
			return true
		}
		if body := p.bodyOf(fn); body != nil {
			newClosure(p, h, body).check()
		}
		return true
	})
}

// closure is one function that a retry helper runs, looked at.
type closure struct {
	p      *pkg
	helper unitHelper
	ftype  *ast.FuncType
	body   *ast.BlockStmt
	// from, to bound what is declared inside: the parameters and the
	// body (a method's receiver is bound outside, before the helper runs).
	from, to token.Pos
	tx       types.Object // the transaction parameter, or nil
	resets   []place      // what the body's top level sets afresh, in order
	// params, for a function a closure calls, are its receiver (-1) and
	// parameters (their index): what is outside it; effects collects
	// what it writes through them. Both nil for a closure.
	params  map[types.Object]int
	effects *[]effect
}

// effect is a write that a function makes through its receiver or a
// parameter.
type effect struct {
	param int    // -1 for the receiver
	what  string // "appends to a.policies"
}

func newClosure(p *pkg, h unitHelper, node ast.Node) *closure {
	c := &closure{p: p, helper: h}
	switch n := node.(type) {
	case *ast.FuncLit:
		c.ftype, c.body = n.Type, n.Body
	case *ast.FuncDecl:
		c.ftype, c.body = n.Type, n.Body
	}
	c.from, c.to = c.ftype.Params.Pos(), c.body.End()
	if h.txParam && len(c.ftype.Params.List) > 0 && len(c.ftype.Params.List[0].Names) > 0 {
		c.tx = p.info.Defs[c.ftype.Params.List[0].Names[0]]
	}
	return c
}

// place is a variable declared outside the closure, or something reached
// from it: root, then the fields and elements on the way ("items", "[]").
type place struct {
	root types.Object
	path []string
	pos  token.Pos
	// through: reached through the variable (a field, an element, what it
	// points to), not the variable itself.
	through bool
}

func (pl place) String() string {
	return strings.Join(append([]string{pl.root.Name()}, pl.path...), ".")
}

// within reports whether pl is q or reached from it.
func (pl place) within(q place) bool {
	if pl.root != q.root || len(q.path) > len(pl.path) {
		return false
	}
	for i, s := range q.path {
		if pl.path[i] != s {
			return false
		}
	}
	return true
}

// related reports whether one of pl and q is reached from the other.
func (pl place) related(q place) bool { return pl.within(q) || q.within(pl) }

// element reports whether pl is inside a map's or slice's element.
func (pl place) element() bool {
	for _, s := range pl.path {
		if s == "[]" {
			return true
		}
	}
	return false
}

// placeOf returns the place that e denotes: a variable, a field of one, an
// element, what a pointer points to.
func placeOf(info *types.Info, e ast.Expr) (place, bool) {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, ok := info.Uses[e].(*types.Var)
		return place{root: v, pos: e.Pos()}, ok && !v.IsField()
	case *ast.SelectorExpr:
		return selectorPlace(info, e)
	case *ast.StarExpr:
		pl, ok := placeOf(info, e.X) // *p and p.f reach what p points to
		pl.through = true
		return pl, ok
	case *ast.UnaryExpr:
		if e.Op == token.AND {
			return placeOf(info, e.X) // &x given to a function that writes *x
		}
	case *ast.IndexExpr:
		pl, ok := placeOf(info, e.X)
		pl.path = append(pl.path[:len(pl.path):len(pl.path)], "[]")
		pl.through = true
		return pl, ok
	}
	return place{}, false
}

func selectorPlace(info *types.Info, e *ast.SelectorExpr) (place, bool) {
	s, ok := info.Selections[e]
	if !ok { // pkg.Var
		v, ok := info.Uses[e.Sel].(*types.Var)
		return place{root: v, pos: e.Pos()}, ok
	}
	if s.Kind() != types.FieldVal {
		return place{}, false
	}
	pl, ok := placeOf(info, e.X)
	pl.path = append(pl.path[:len(pl.path):len(pl.path)], e.Sel.Name)
	pl.through = true
	return pl, ok
}

// outside reports whether pl's variable is declared outside the closure.
// For a function a closure calls, what is outside it is what it reaches
// through its receiver and parameters (assigning a parameter itself
// writes nothing of its caller's).
func (c *closure) outside(pl place) bool {
	if c.params != nil {
		return c.outsideRoot(pl) && pl.through && (pl.element() || sharedType(pl.root.Type()))
	}
	return c.outsideRoot(pl)
}

// outsideRoot reports whether pl's variable is declared outside the
// closure, or is a receiver or parameter of a function it calls.
func (c *closure) outsideRoot(pl place) bool {
	if c.params != nil {
		_, ok := c.params[pl.root]
		return ok
	}
	pos := pl.root.Pos()
	return pos < c.from || pos >= c.to
}

// outsidePlace is placeOf for a place outside the closure only.
func (c *closure) outsidePlace(e ast.Expr) (place, bool) {
	pl, ok := placeOf(c.p.info, e)
	return pl, ok && c.outside(pl)
}

func (c *closure) check() {
	c.findResets()
	ast.Inspect(c.body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			c.checkAssign(n)
		case *ast.IncDecStmt:
			c.checkWrite(n.X, "updates %s from its old value ("+n.Tok.String()+")")
		case *ast.CallExpr:
			c.checkCall(n)
		}
		return true
	})
}

// findResets records what the body's top-level statements set afresh:
// x = <anything that does not read x>, x = x[:0], clear(x).
func (c *closure) findResets() {
	for _, st := range c.body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok != token.ASSIGN {
				continue
			}
			for i, lhs := range st.Lhs {
				if pl, ok := c.outsidePlace(lhs); ok && !pl.element() && c.fresh(pl, st, i) {
					pl.pos = st.Pos()
					c.resets = append(c.resets, pl)
				}
			}
		case *ast.ExprStmt:
			if call, ok := st.X.(*ast.CallExpr); ok && c.builtin(call, "clear") && len(call.Args) == 1 {
				if pl, ok := c.outsidePlace(call.Args[0]); ok {
					pl.pos = st.Pos()
					c.resets = append(c.resets, pl)
				}
			}
		}
	}
}

// fresh reports whether the assignment st gives its i-th left-hand side
// pl a value that does not depend on pl's old one.
func (c *closure) fresh(pl place, st *ast.AssignStmt, i int) bool {
	rhs := st.Rhs[0]
	if len(st.Rhs) == len(st.Lhs) {
		rhs = st.Rhs[i]
	}
	if s, ok := ast.Unparen(rhs).(*ast.SliceExpr); ok && isZero(s.High) && (s.Low == nil || isZero(s.Low)) {
		if x, ok := placeOf(c.p.info, s.X); ok && x.within(pl) && pl.within(x) {
			return true // x = x[:0]
		}
	}
	return !c.reads(rhs, pl)
}

func isZero(e ast.Expr) bool {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	return ok && lit.Kind == token.INT && lit.Value == "0"
}

// reads reports whether e reads pl, something reached from it, or what it
// is reached from.
func (c *closure) reads(e ast.Expr, pl place) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		x, ok := n.(ast.Expr)
		if found || !ok {
			return !found
		}
		if q, ok := placeOf(c.p.info, x); ok {
			found = q.related(pl)
			if ix, ok := ast.Unparen(x).(*ast.IndexExpr); ok && !found {
				found = c.reads(ix.Index, pl)
			}
			return false
		}
		return true
	})
	return found
}

// reset reports whether pl was set afresh at the top of the body before
// pos.
func (c *closure) reset(pl place, pos token.Pos) bool {
	for _, r := range c.resets {
		if r.pos < pos && pl.within(r) {
			return true
		}
	}
	return false
}

func (c *closure) checkAssign(st *ast.AssignStmt) {
	switch st.Tok {
	case token.DEFINE:
		return // new variables, or ones of the same scope: inside
	case token.ASSIGN:
		for i, lhs := range st.Lhs {
			pl, ok := c.outsidePlace(lhs)
			switch {
			case !ok:
			case pl.element():
				c.checkWrite(lhs, "writes an element of %s")
			case !c.fresh(pl, st, i) && isAppend(st, i):
				c.checkWrite(lhs, "appends to %s")
			case !c.fresh(pl, st, i):
				c.checkWrite(lhs, "updates %s from its old value")
			}
		}
	default: // +=, -=, |=, …
		c.checkWrite(st.Lhs[0], "updates %s from its old value ("+st.Tok.String()+")")
	}
}

// isAppend reports whether the i-th value st assigns is an append.
func isAppend(st *ast.AssignStmt, i int) bool {
	if len(st.Rhs) != len(st.Lhs) {
		return false
	}
	call, ok := ast.Unparen(st.Rhs[i]).(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	return ok && id.Name == "append"
}

// checkCall looks at the builtins that write a map or slice (delete, copy)
// and at a Commit or Rollback of the closure's transaction.
func (c *closure) checkCall(call *ast.CallExpr) {
	switch {
	case c.builtin(call, "delete") && len(call.Args) == 2:
		c.checkElements(call.Args[0], "deletes from %s")
	case c.builtin(call, "copy") && len(call.Args) == 2:
		c.checkElements(call.Args[0], "copies into %s")
	default:
		c.checkCommit(call)
		c.checkCallee(call)
	}
}

// checkElements reports a write of the elements of e when e is outside.
func (c *closure) checkElements(e ast.Expr, what string) {
	pl, ok := placeOf(c.p.info, e)
	pl.path = append(pl.path[:len(pl.path):len(pl.path)], "[]")
	pl.through = true
	if ok && c.outside(pl) {
		c.reportWrite(pl, e, e.Pos(), what)
	}
}

// checkWrite reports the write of e when e is outside and not reset.
func (c *closure) checkWrite(e ast.Expr, what string) {
	if pl, ok := c.outsidePlace(e); ok {
		c.reportWrite(pl, e, e.Pos(), what)
	}
}

// reportWrite reports a write of pl, which e shows (what says how, with
// %s for it), unless pl was reset before pos.
func (c *closure) reportWrite(pl place, e ast.Expr, pos token.Pos, what string) {
	if c.reset(pl, pos) {
		return
	}
	for {
		ix, ok := ast.Unparen(e).(*ast.IndexExpr)
		if !ok {
			break
		}
		e = ix.X // the map or slice whose element is written
	}
	x := types.ExprString(e)
	if c.effects != nil {
		*c.effects = append(*c.effects, effect{param: c.params[pl.root], what: sprintf(what, x)})
		return
	}
	c.p.report(pos, "the closure given to %s %s, declared outside it: a retry runs the closure again and keeps what the failed attempt did to it; "+
		"reset %s at the top of the closure, or build the result in a local and assign it after success",
		c.helper.name, sprintf(what, x), x)
}

// builtin reports whether call calls the builtin name.
func (c *closure) builtin(call *ast.CallExpr, name string) bool {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok || id.Name != name {
		return false
	}
	_, ok = c.p.info.Uses[id].(*types.Builtin)
	return ok
}

// checkCommit reports tx.Commit() and tx.Rollback() on the transaction
// the closure was given (tx.Tx.Commit(), tx.WithContext(ctx).Rollback()
// too).
func (c *closure) checkCommit(call *ast.CallExpr) {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if c.tx == nil || !ok || (sel.Sel.Name != "Commit" && sel.Sel.Name != "Rollback") {
		return
	}
	if s, ok := c.p.info.Selections[sel]; !ok || s.Kind() != types.MethodVal || rootOf(c.p.info, sel.X) != c.tx {
		return
	}
	c.p.report(sel.Sel.Pos(), "%s.%s in the closure given to %s: the helper commits the transaction when the closure returns nil and rolls it back when it returns an error, "+
		"and re-runs it on a fresh one; a transaction the closure ended itself fails the helper's own %s, and work committed here would run again; return nil or the error instead",
		types.ExprString(sel.X), sel.Sel.Name, c.helper.name, strings.ToUpper(sel.Sel.Name))
}

// rootOf returns the variable an expression such as tx.Tx or
// tx.WithContext(ctx) starts from.
func rootOf(info *types.Info, e ast.Expr) types.Object {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return info.Uses[x]
		case *ast.SelectorExpr:
			e = x.X
		case *ast.CallExpr:
			e = x.Fun
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// sharedType reports whether a value of type t shares what it reaches
// with its copies: a pointer, map, slice, channel or interface (a struct
// given by value is a copy: writing its fields writes nothing outside).
func sharedType(t types.Type) bool {
	switch t.Underlying().(type) {
	case *types.Pointer, *types.Map, *types.Slice, *types.Chan, *types.Interface:
		return true
	}
	return false
}

// checkCallee reports a call of a function or method of the package that
// writes, through its receiver or a parameter, something outside the
// closure (a.addPolicy(r), which appends to a.policies).
func (c *closure) checkCallee(call *ast.CallExpr) {
	fn := originOf(funcOf(c.p.info, call.Fun))
	decl, ok := c.p.decls[fn]
	if !ok {
		return
	}
	for _, e := range c.p.effectsOf(decl) {
		arg := argument(c.p.info, call, e.param)
		if arg == nil {
			continue
		}
		pl, ok := placeOf(c.p.info, arg)
		if !ok || !c.outsideRoot(pl) || c.reset(pl, call.Pos()) {
			continue
		}
		if c.effects != nil {
			*c.effects = append(*c.effects, effect{param: c.params[pl.root], what: "calls " + fn.Name() + ", which " + e.what})
			continue
		}
		x := types.ExprString(arg)
		c.p.report(call.Pos(), "the closure given to %s calls %s, which %s (%s, declared outside the closure): a retry runs the closure again and keeps what the failed attempt did to it; "+
			"reset %s at the top of the closure, or change it after the helper returned nil",
			c.helper.name, types.ExprString(call.Fun), e.what, x, x)
		return // one finding a call
	}
}

// argument returns the expression that call gives for the receiver (-1)
// or the i-th parameter, or nil.
func argument(info *types.Info, call *ast.CallExpr, i int) ast.Expr {
	if i >= 0 {
		if i < len(call.Args) {
			return call.Args[i]
		}
		return nil
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if s, found := info.Selections[sel]; !ok || !found || s.Kind() != types.MethodVal {
		return nil
	}
	return sel.X
}

// effectsOf returns what decl writes through its receiver and parameters
// (and through those of the package's functions it calls with them).
func (p *pkg) effectsOf(decl *ast.FuncDecl) []effect {
	if e, ok := p.effects[decl]; ok {
		return e // known, or being worked out (a recursion: nothing more)
	}
	p.effects[decl] = nil
	var found []effect
	c := &closure{p: p, ftype: decl.Type, body: decl.Body, params: map[types.Object]int{}, effects: &found}
	if decl.Recv != nil {
		for _, name := range decl.Recv.List[0].Names {
			c.params[p.info.Defs[name]] = -1
		}
	}
	i := 0
	for _, field := range decl.Type.Params.List {
		for _, name := range field.Names {
			if obj := p.info.Defs[name]; obj != nil {
				c.params[obj] = i
			}
			i++
		}
		if len(field.Names) == 0 {
			i++
		}
	}
	// A parameter the function assigns may point elsewhere afterwards:
	// left out rather than guessed at.
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for _, lhs := range as.Lhs {
				if id, ok := ast.Unparen(lhs).(*ast.Ident); ok {
					delete(c.params, p.info.Uses[id])
				}
			}
		}
		return true
	})
	c.check()
	p.effects[decl] = found
	return found
}

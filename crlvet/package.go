package crlvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// pkg is what the checks share about the package being analyzed.
type pkg struct {
	pass *analysis.Pass
	info *types.Info
	// decls are the package's functions and methods with a body, so that
	// one given by name to a retry helper is followed as a literal is.
	decls map[*types.Func]*ast.FuncDecl
	// units are the function bodies (*ast.FuncLit or *ast.FuncDecl) that
	// a transaction helper runs: re-runs as a whole (crl's helpers), or
	// runs once and is reported for it (GORM's and bun's). A transaction
	// begun inside one is a savepoint or is re-run with it.
	units map[ast.Node]bool
	// ignores are the //crlvet:ignore directives, by file and line.
	ignores map[string]map[int]directive
	// reported keeps one finding per position and message (a function
	// given to two helpers is looked at twice).
	reported map[string]bool
	// effects are the writes that a function makes through its receiver
	// and parameters, worked out once.
	effects map[*ast.FuncDecl][]effect
}

func newPackage(pass *analysis.Pass) *pkg {
	p := &pkg{
		pass:     pass,
		info:     pass.TypesInfo,
		decls:    map[*types.Func]*ast.FuncDecl{},
		units:    map[ast.Node]bool{},
		ignores:  map[string]map[int]directive{},
		reported: map[string]bool{},
		effects:  map[*ast.FuncDecl][]effect{},
	}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := p.info.Defs[fd.Name].(*types.Func); ok {
					p.decls[fn] = fd
				}
			}
		}
		p.readDirectives(f)
	}
	for _, f := range pass.Files {
		p.findUnits(f)
	}
	p.followCalls()
	return p
}

// followCalls adds to the units the functions of the package that a unit
// calls, and those they call: a transaction begun there runs inside the
// unit (crl.Retry(ctx, func(ctx context.Context) error { return
// s.createOrder(ctx, o) })).
func (p *pkg) followCalls() {
	var work []ast.Node
	for n := range p.units {
		work = append(work, n)
	}
	for len(work) > 0 {
		n := work[len(work)-1]
		work = work[:len(work)-1]
		ast.Inspect(n, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if d, ok := p.decls[originOf(funcOf(p.info, call.Fun))]; ok && !p.units[d] {
				p.units[d] = true
				work = append(work, d)
			}
			return true
		})
	}
}

func originOf(f *types.Func) *types.Func {
	if f == nil {
		return nil
	}
	return f.Origin()
}

// findUnits records the bodies that transaction helpers run.
func (p *pkg) findUnits(f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if _, fn, ok := p.helperCall(call); ok {
			if body := p.bodyOf(fn); body != nil {
				p.units[body] = true
			}
		}
		return true
	})
}

// report reports a finding at pos unless a directive with a reason
// silences it.
func (p *pkg) report(pos token.Pos, format string, args ...any) {
	position := p.pass.Fset.Position(pos)
	if p.ignored(position) {
		return
	}
	d := analysis.Diagnostic{Pos: pos, Message: sprintf(format, args...)}
	key := position.String() + d.Message
	if p.reported[key] {
		return
	}
	p.reported[key] = true
	p.pass.Report(d)
}

// inUnit reports whether the innermost node of stack is inside a body
// that a transaction helper runs.
func (p *pkg) inUnit(stack []ast.Node) bool {
	for _, n := range stack[:len(stack)-1] {
		if p.units[n] {
			return true
		}
	}
	return false
}

// funcOf returns the function or method that e names (an identifier, a
// selector, a method value or expression, a generic instantiation), or nil.
func funcOf(info *types.Info, e ast.Expr) *types.Func {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		f, _ := info.Uses[e].(*types.Func)
		return f
	case *ast.SelectorExpr:
		f, _ := info.Uses[e.Sel].(*types.Func)
		return f
	case *ast.IndexExpr:
		return funcOf(info, e.X)
	case *ast.IndexListExpr:
		return funcOf(info, e.X)
	}
	return nil
}

// funcID names f by its package path, the type of its receiver (for a
// method) and its name: "database/sql.DB.BeginTx", "github.com/crl-go/crl.Retry".
func funcID(f *types.Func) string {
	if f == nil || f.Pkg() == nil {
		return ""
	}
	f = f.Origin()
	recv := f.Type().(*types.Signature).Recv()
	if recv == nil {
		return f.Pkg().Path() + "." + f.Name()
	}
	if n := namedOf(recv.Type()); n != nil {
		return f.Pkg().Path() + "." + n.Obj().Name() + "." + f.Name()
	}
	return f.Pkg().Path() + ".?." + f.Name()
}

// namedOf returns the named type t is, or points to, or nil.
func namedOf(t types.Type) *types.Named {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

// isNamed reports whether t, or what it points to, is a named type of the
// package path, called name ("" for any name).
func isNamed(t types.Type, path, name string) bool {
	named := namedOf(t)
	if named == nil {
		return false
	}
	obj := named.Obj()
	return obj.Pkg() != nil && obj.Pkg().Path() == path && (name == "" || obj.Name() == name)
}

// isArg reports whether e is one of call's arguments.
func isArg(call *ast.CallExpr, e ast.Expr) bool {
	for _, a := range call.Args {
		if ast.Unparen(a) == e {
			return true
		}
	}
	return false
}

// inspectWithStack walks f, calling fn with each node and the nodes that
// enclose it (the node itself last).
func inspectWithStack(f ast.Node, fn func(n ast.Node, stack []ast.Node)) {
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		fn(n, stack)
		return true
	})
}

// receiverExpr returns the expression of the receiver of the method that
// sel names: sel.X for a method value or call, the first argument of a
// method expression's call ((*gorm.DB).Transaction(db, fn)), else the
// receiver type's name.
func receiverExpr(info *types.Info, sel *ast.SelectorExpr, parent ast.Node) string {
	s, ok := info.Selections[sel]
	if ok && s.Kind() == types.MethodExpr {
		if call, ok := parent.(*ast.CallExpr); ok && call.Fun == sel && len(call.Args) > 0 {
			return types.ExprString(call.Args[0])
		}
		if n := namedOf(s.Recv()); n != nil {
			return strings.ToLower(n.Obj().Name()[:1]) + n.Obj().Name()[1:]
		}
	}
	return types.ExprString(sel.X)
}

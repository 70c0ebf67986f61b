package crlvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"
)

// directivePrefix starts a comment that silences the finding on its line
// (or, alone on a line, on the next one): //crlvet:ignore <reason>.
const directivePrefix = "//crlvet:ignore"

// directive is one //crlvet:ignore comment.
type directive struct {
	reason string
	alone  bool // no code on its line: it applies to the next line
}

// readDirectives records f's directives and reports those without a
// reason.
func (p *pkg) readDirectives(f *ast.File) {
	var code map[int]bool // the lines that hold code, read when a directive needs it
	for _, g := range f.Comments {
		for _, c := range g.List {
			rest, ok := strings.CutPrefix(c.Text, directivePrefix)
			if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
				continue
			}
			pos := p.pass.Fset.Position(c.Pos())
			if code == nil {
				code = codeLines(p.pass.Fset, f)
			}
			reason, _, _ := strings.Cut(rest, "//") // a further comment is no reason
			d := directive{reason: strings.TrimSpace(reason), alone: !code[pos.Line]}
			if d.reason == "" {
				p.pass.Reportf(c.Pos(), "%s needs a reason: say why this place may lose crl's retries or run twice (%s uses the caller's transaction); without one it silences nothing", directivePrefix, directivePrefix)
			}
			if p.ignores[pos.Filename] == nil {
				p.ignores[pos.Filename] = map[int]directive{}
			}
			p.ignores[pos.Filename][pos.Line] = d
		}
	}
}

// ignored reports whether a directive with a reason silences a finding at
// pos: on its line, or alone on the line above.
func (p *pkg) ignored(pos token.Position) bool {
	lines := p.ignores[pos.Filename]
	if d, ok := lines[pos.Line]; ok && d.reason != "" {
		return true
	}
	d, ok := lines[pos.Line-1]
	return ok && d.alone && d.reason != ""
}

// codeLines returns the lines of f on which an identifier or a literal
// starts.
func codeLines(fset *token.FileSet, f *ast.File) map[int]bool {
	lines := map[int]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.Ident, *ast.BasicLit:
			lines[fset.Position(n.Pos()).Line] = true
		}
		return true
	})
	return lines
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

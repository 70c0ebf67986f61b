// Package golangci is crlvet as a golangci-lint module plugin. Build a
// golangci-lint that includes it with `golangci-lint custom` and a
// .custom-gcl.yml such as
//
//	version: v2.5.0
//	plugins:
//	  - module: github.com/crl-go/crl/crlvet
//	    import: github.com/crl-go/crl/crlvet/golangci
//	    version: latest
//
// and enable it in .golangci.yml:
//
//	linters:
//	  enable: [crlvet]
//	  settings:
//	    custom:
//	      crlvet:
//	        type: module
//	        settings:
//	          all: false
//
// The settings are crlvet.Settings.
package golangci

import (
	"fmt"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/crl-go/crl/crlvet"
)

// golangci-lint finds module plugins through its registry, which a
// plugin fills when it is linked in.
func init() { register.Plugin("crlvet", New) }

// Plugin is the crlvet linter of golangci-lint.
type Plugin struct{ settings crlvet.Settings }

var _ register.LinterPlugin = (*Plugin)(nil)

// New decodes the plugin's settings (crlvet.Settings) from golangci-lint's
// configuration.
func New(settings any) (register.LinterPlugin, error) {
	s, err := register.DecodeSettings[crlvet.Settings](settings)
	if err != nil {
		return nil, fmt.Errorf("crlvet: golangci-lint settings: %w", err)
	}
	return &Plugin{settings: s}, nil
}

// BuildAnalyzers returns the crlvet analyzer with the plugin's settings.
func (p *Plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	return []*analysis.Analyzer{crlvet.New(p.settings)}, nil
}

// GetLoadMode is types information: the analyzer resolves types.
func (p *Plugin) GetLoadMode() string { return register.LoadModeTypesInfo }

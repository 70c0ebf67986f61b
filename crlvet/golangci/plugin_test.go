package golangci

import (
	"testing"

	"github.com/golangci/plugin-module-register/register"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPluginRegistered(t *testing.T) {
	newPlugin, err := register.GetPlugin("crlvet")
	require.NoError(t, err)
	p, err := newPlugin(map[string]any{"gormall": true})
	require.NoError(t, err)
	analyzers, err := p.BuildAnalyzers()
	require.NoError(t, err)
	require.Len(t, analyzers, 1)
	assert.Equal(t, "crlvet", analyzers[0].Name)
	assert.Equal(t, "true", analyzers[0].Flags.Lookup("gormall").Value.String())
	assert.Equal(t, register.LoadModeTypesInfo, p.GetLoadMode())

	p, err = newPlugin(map[string]any{"all": true})
	require.NoError(t, err)
	analyzers, err = p.BuildAnalyzers()
	require.NoError(t, err)
	assert.Equal(t, "true", analyzers[0].Flags.Lookup("all").Value.String())

	_, err = newPlugin(map[string]any{"gormAl": true})
	assert.ErrorContains(t, err, "crlvet: golangci-lint settings")
}

module github.com/crl-go/crl/crlvet

go 1.25.0

require (
	github.com/golangci/plugin-module-register v0.1.2
	github.com/stretchr/testify v1.12.1
	golang.org/x/tools v0.48.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/mod v0.38.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
)

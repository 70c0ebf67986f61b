package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/internal/tables/family"
)

// -driver takes exactly the names of the one table of driver families.
func TestFamiliesOfTheCLI(t *testing.T) {
	for name, want := range family.Probes() {
		assert.Equal(t, want != family.Other, knownDriver(name), "%q", name)
	}
}

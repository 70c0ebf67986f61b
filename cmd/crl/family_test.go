package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/testsupport/familyprobe"
)

// -driver takes exactly the names of the one table of driver families.
func TestFamiliesOfTheCLI(t *testing.T) {
	for name, want := range familyprobe.Names() {
		assert.Equal(t, want != family.Other, knownDriver(name), "%q", name)
	}
}

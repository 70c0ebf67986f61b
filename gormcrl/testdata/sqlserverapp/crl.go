//go:build withcrl

package main

import (
	"gorm.io/gorm"

	"github.com/crl-go/crl/gormcrl"
)

func init() {
	wrap = func(d gorm.Dialector) gorm.Dialector { return gormcrl.Open(d) }
}

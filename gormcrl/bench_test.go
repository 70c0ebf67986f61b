package gormcrl_test

import (
	"testing"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// BenchmarkFirst measures First on the success path against mssqltest:
// plain GORM, and GORM with the plugin (gormcrl.Open), whose cost is one
// callback pair and the statement loop around the query.
func BenchmarkFirst(b *testing.B) {
	s := mssqltest.NewServer(b)
	s.Handle(selectFirst, orderRow(7, "pen"))
	for _, bc := range plainAndPlugin(b, s) {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var o Order
				if err := bc.db.First(&o, 7).Error; err != nil || o.ID != 7 {
					b.Fatal(err, o)
				}
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var o Order
					if err := bc.db.First(&o, 7).Error; err != nil || o.ID != 7 {
						b.Error(err, o) // Fatal must not be called from RunParallel's goroutines
						return
					}
				}
			})
		})
	}
}

// BenchmarkCreate measures Create on the success path: the plugin's
// whole-unit retry snapshots the value and clones the statement first.
func BenchmarkCreate(b *testing.B) {
	s := mssqltest.NewServer(b)
	s.Handle(insertOrder, idRow(8))
	for _, bc := range plainAndPlugin(b, s) {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				o := Order{Name: "pen"}
				if err := bc.db.Create(&o).Error; err != nil || o.ID != 8 {
					b.Fatal(err, o)
				}
			}
		})
	}
}

type benchDB struct {
	name string
	db   *gorm.DB
}

// plainAndPlugin opens plain GORM and GORM through gormcrl.Open on s, to
// run the same benchmark side by side.
func plainAndPlugin(b *testing.B, s *mssqltest.Server) []benchDB {
	b.Helper()
	cfg := func() *gorm.Config { return &gorm.Config{Logger: logger.Discard} }
	plain, err := gorm.Open(sqlserver.Open(s.DSN()), cfg())
	if err != nil {
		b.Fatal(err)
	}
	withPlugin, err := gorm.Open(gormcrl.Open(sqlserver.Open(s.DSN()), gormcrl.WithRetryExec(deadlockRules)), cfg())
	if err != nil {
		b.Fatal(err)
	}
	return []benchDB{{"plain", plain}, {"plugin", withPlugin}}
}

// BenchmarkCreateAlone measures Create with SkipDefaultTransaction on the
// success path: the statement is the driver layer's alone, and the plugin
// adds nothing to it.
func BenchmarkCreateAlone(b *testing.B) {
	s := mssqltest.NewServer(b)
	s.Handle(insertOrder, idRow(8))
	for _, bc := range plainAndPlugin(b, s) {
		db := bc.db.Session(&gorm.Session{SkipDefaultTransaction: true})
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				o := Order{Name: "pen"}
				if err := db.Create(&o).Error; err != nil || o.ID != 8 {
					b.Fatal(err, o)
				}
			}
		})
	}
}

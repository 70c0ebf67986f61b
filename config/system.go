package config

import "github.com/crl-go/crl/internal/tables/family"

// SystemName returns the db.system.name value of the OpenTelemetry
// database-client semantic conventions for a handle of the database/sql
// driver driverName, by crl's table of driver families
// (case-insensitively): "microsoft.sql_server" for sqlserver, mssql and
// azuresql; "mysql" for mysql and mariadb (the driver cannot tell a
// MariaDB server apart); "postgresql" for pgx, pgx/v5, postgres and
// postgresql. It returns "" for a driver crl does not know, such as a
// wrapped driver's name.
func SystemName(driverName string) string { return family.Of(driverName).Profile().SystemName }

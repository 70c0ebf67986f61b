package crl

// DriverConnector is driverConnector for the external tests: the
// registered driver's own connector for a DSN, as Open builds it.
var DriverConnector = driverConnector

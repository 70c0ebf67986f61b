package mssqltest

import (
	"encoding/binary"
	"fmt"
)

// PRELOGIN option tokens (MS-TDS 2.2.6.5).
const (
	preloginVersion    byte = 0x00
	preloginEncryption byte = 0x01
	preloginInstOpt    byte = 0x02
	preloginThreadID   byte = 0x03
	preloginMARS       byte = 0x04
	preloginTerminator byte = 0xFF
)

// encryptNotSupported tells the client that this server speaks no TLS, so a
// driver configured with encrypt=disable (or false) logs in in clear text.
const encryptNotSupported byte = 0x02

// serverVersion is what PRELOGIN and LOGINACK report: SQL Server 2022 RTM.
const (
	versionMajor = 16
	versionMinor = 0
	versionBuild = 1000
)

// parsePrelogin checks that a PRELOGIN payload is a well-formed option table
// whose every option lies inside the payload, and returns the options.
func parsePrelogin(payload []byte) (map[byte][]byte, error) {
	options := map[byte][]byte{}
	for i := 0; ; i += 5 {
		if i >= len(payload) {
			return nil, fmt.Errorf("%w: PRELOGIN option table has no terminator", errMalformed)
		}
		token := payload[i]
		if token == preloginTerminator {
			return options, nil
		}
		if i+5 > len(payload) {
			return nil, fmt.Errorf("%w: PRELOGIN option %#x is truncated", errMalformed, token)
		}
		offset := int(binary.BigEndian.Uint16(payload[i+1:]))
		length := int(binary.BigEndian.Uint16(payload[i+3:]))
		if offset+length > len(payload) {
			return nil, fmt.Errorf("%w: PRELOGIN option %#x points past the end (%d+%d > %d)", errMalformed, token, offset, length, len(payload))
		}
		options[token] = payload[offset : offset+length]
	}
}

// preloginResponse builds the server's PRELOGIN answer.
func preloginResponse() []byte {
	type option struct {
		token byte
		value []byte
	}
	options := []option{
		{preloginVersion, []byte{versionMajor, versionMinor, byte(versionBuild >> 8), byte(versionBuild & 0xFF), 0, 0}},
		{preloginEncryption, []byte{encryptNotSupported}},
		{preloginInstOpt, []byte{0}},
		{preloginThreadID, nil},
		{preloginMARS, []byte{0}},
	}
	offset := 5*len(options) + 1
	out := make([]byte, 0, offset+16)
	for _, o := range options {
		out = append(out, o.token, byte(offset>>8), byte(offset), byte(len(o.value)>>8), byte(len(o.value)))
		offset += len(o.value)
	}
	out = append(out, preloginTerminator)
	for _, o := range options {
		out = append(out, o.value...)
	}
	return out
}

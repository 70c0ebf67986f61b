package mssqltest

import (
	"fmt"
)

// login7 holds the LOGIN7 fields this server uses.
type login7 struct {
	tdsVersion uint32
	packetSize int
	user       string
	appName    string
	database   string
}

// login7FixedLength is the fixed part of LOGIN7 for TDS 7.2 and later
// (MS-TDS 2.2.6.4): lengths, flags and the offset/length table.
const login7FixedLength = 94

// parseLogin7 decodes a LOGIN7 payload. Strings are located through the
// offset/length table and must lie inside the payload.
func parseLogin7(payload []byte) (login7, error) {
	d := &decoder{buf: payload}
	total := d.uint32("LOGIN7 length")
	var l login7
	l.tdsVersion = d.uint32("LOGIN7 TDS version")
	l.packetSize = int(d.uint32("LOGIN7 packet size"))
	if d.err != nil {
		return login7{}, d.err
	}
	if len(payload) < login7FixedLength {
		return login7{}, fmt.Errorf("%w: LOGIN7 is %d bytes, shorter than its %d-byte fixed part", errMalformed, len(payload), login7FixedLength)
	}
	if int(total) > len(payload) {
		return login7{}, fmt.Errorf("%w: LOGIN7 claims %d bytes, has %d", errMalformed, total, len(payload))
	}
	field := func(at int, what string) string {
		f := &decoder{buf: payload, pos: at}
		offset := int(f.uint16(what))
		chars := int(f.uint16(what))
		s := &decoder{buf: payload, pos: offset}
		v := s.ucs2(chars, what)
		if s.err != nil && d.err == nil {
			d.err = s.err
		}
		return v
	}
	l.user = field(40, "LOGIN7 user name")
	l.appName = field(48, "LOGIN7 application name")
	l.database = field(68, "LOGIN7 database")
	if d.err != nil {
		return login7{}, d.err
	}
	if l.database == "" {
		l.database = "master"
	}
	switch {
	case l.packetSize == 0:
		l.packetSize = defaultPacketSize
	case l.packetSize < minPacketSize:
		l.packetSize = minPacketSize
	case l.packetSize > maxPacketSize:
		l.packetSize = maxPacketSize
	}
	return l, nil
}

// loginAccepted writes what SQL Server answers to a good login: the database
// and packet size in force, the collation, LOGINACK and a final DONE.
func loginAccepted(t *tokenWriter, l login7) {
	t.envChangeString(envDatabase, l.database, "master")
	t.envChangeCollation()
	t.envChangeString(envLanguage, "us_english", "")
	t.envChangeString(envPacketSize, fmt.Sprint(l.packetSize), fmt.Sprint(l.packetSize))
	t.loginAck()
	t.done(tokenDone, doneFinal, 0, 0)
}

// loginRejected writes the ERROR token and the DONE with the error bit that
// SQL Server sends before it closes a connection whose login failed.
func loginRejected(t *tokenWriter, e serverError) {
	t.error(e)
	t.done(tokenDone, doneError, 0, 0)
}

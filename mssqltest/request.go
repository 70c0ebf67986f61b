package mssqltest

import (
	"fmt"
	"strings"
)

// requestKind tells how a statement reached the server.
type requestKind int

const (
	requestBatch       requestKind = iota // SQL batch (packet type 1)
	requestRPC                            // RPC, e.g. sp_executesql (packet type 3)
	requestTransaction                    // transaction manager request (packet type 14)
)

// Transaction manager request types (MS-TDS 2.2.6.9).
const (
	tmBegin    uint16 = 5
	tmCommit   uint16 = 7
	tmRollback uint16 = 8
	tmSave     uint16 = 9
)

// The names under which transaction manager requests are counted and can be
// scripted with Handle.
const (
	beginTransactionText    = "BEGIN TRANSACTION"
	commitTransactionText   = "COMMIT TRANSACTION"
	rollbackTransactionText = "ROLLBACK TRANSACTION"
)

// spExecuteSQL is the well-known id of sp_executesql (MS-TDS 2.2.6.6).
const spExecuteSQL = 10

// wellKnownProcs names the stored procedures an RPC may call by id.
var wellKnownProcs = [...]string{
	1: "sp_cursor", 2: "sp_cursoropen", 3: "sp_cursorprepare", 4: "sp_cursorexecute",
	5: "sp_cursorprepexec", 6: "sp_cursorunprepare", 7: "sp_cursorfetch", 8: "sp_cursoroption",
	9: "sp_cursorclose", 10: "sp_executesql", 11: "sp_prepare", 12: "sp_execute",
	13: "sp_prepexec", 14: "sp_prepexecrpc", 15: "sp_unprepare",
}

// request is a decoded client request.
type request struct {
	kind requestKind
	// text is the statement as Handle and Count see it: the batch text, the
	// first argument of sp_executesql, the name of any other procedure, or
	// one of the *TransactionText names.
	text string
	// tm is the transaction manager request type, for requestTransaction.
	tm uint16
}

// decodeRequest decodes the payload of a SQL batch, RPC or transaction
// manager message. Any other packet type, or a payload that does not follow
// MS-TDS, is an error.
func decodeRequest(typ byte, payload []byte) (request, error) {
	d := &decoder{buf: payload}
	skipAllHeaders(d)
	if d.err != nil {
		return request{}, d.err
	}
	switch typ {
	case packetSQLBatch:
		return request{kind: requestBatch, text: decodeUCS2(payload[d.pos:])}, nil
	case packetRPC:
		text, err := decodeRPC(d)
		return request{kind: requestRPC, text: text}, err
	case packetTransaction:
		tm := d.uint16("transaction request type")
		if d.err != nil {
			return request{}, d.err
		}
		return request{kind: requestTransaction, tm: tm, text: transactionText(tm)}, nil
	default:
		return request{}, fmt.Errorf("%w: unexpected packet type %#x after login", errMalformed, typ)
	}
}

// skipAllHeaders skips the ALL_HEADERS block that TDS 7.2 and later put in
// front of every batch, RPC and transaction manager request.
func skipAllHeaders(d *decoder) {
	total := int(d.uint32("ALL_HEADERS length"))
	if d.err != nil {
		return
	}
	if total < 4 {
		d.err = fmt.Errorf("%w: ALL_HEADERS length %d is shorter than itself", errMalformed, total)
		return
	}
	d.skip(total-4, "ALL_HEADERS")
}

func transactionText(tm uint16) string {
	switch tm {
	case tmBegin:
		return beginTransactionText
	case tmCommit:
		return commitTransactionText
	case tmRollback:
		return rollbackTransactionText
	case tmSave:
		return "SAVE TRANSACTION"
	default:
		return fmt.Sprintf("TRANSACTION MANAGER REQUEST %d", tm)
	}
}

// decodeRPC returns the statement an RPC runs: for sp_executesql its first
// parameter, otherwise the procedure's name.
func decodeRPC(d *decoder) (string, error) {
	var name string
	n := d.uint16("RPC procedure name length")
	if n == 0xFFFF {
		id := d.uint16("RPC procedure id")
		if int(id) < len(wellKnownProcs) && wellKnownProcs[id] != "" {
			name = wellKnownProcs[id]
		} else {
			name = fmt.Sprintf("procedure %d", id)
		}
	} else {
		name = d.ucs2(int(n), "RPC procedure name")
	}
	d.uint16("RPC option flags")
	if d.err != nil {
		return "", d.err
	}
	if !strings.EqualFold(name, wellKnownProcs[spExecuteSQL]) && !strings.EqualFold(name, "sys.sp_executesql") {
		return name, nil
	}
	d.bVarChar("sp_executesql parameter name")
	d.uint8("sp_executesql parameter status")
	text := stringParameter(d)
	if d.err != nil {
		return "", d.err
	}
	return text, nil
}

// Type ids a string parameter may have (MS-TDS 2.2.5.4.3).
const (
	typeBigVarChar byte = 0xA7
	typeBigChar    byte = 0xAF
	typeNChar      byte = 0xEF
)

// stringParameter reads the TYPE_INFO and value of an (n)(var)char
// parameter, short or max.
func stringParameter(d *decoder) string {
	typ := d.uint8("parameter type")
	if d.err != nil {
		return ""
	}
	wide := typ == typeNVarChar || typ == typeNChar
	if !wide && typ != typeBigVarChar && typ != typeBigChar {
		d.err = fmt.Errorf("%w: sp_executesql statement has type %#x, not a string", errMalformed, typ)
		return ""
	}
	maxLen := d.uint16("parameter max length")
	d.skip(len(collationLatin1), "parameter collation")
	var raw []byte
	if maxLen == plpMarker {
		raw = plpValue(d)
	} else {
		n := d.uint16("parameter length")
		if n != 0xFFFF { // 0xFFFF is NULL
			raw = d.take(int(n), "parameter value")
		}
	}
	if wide {
		return decodeUCS2(raw)
	}
	return string(raw)
}

// plpValue reads a partially length-prefixed value: a total length, then
// chunks until an empty one.
func plpValue(d *decoder) []byte {
	lo := d.uint32("PLP length")
	hi := d.uint32("PLP length")
	if d.err != nil || (lo == 0xFFFFFFFF && hi == 0xFFFFFFFF) { // PLP NULL
		return nil
	}
	var out []byte
	for d.err == nil {
		n := d.uint32("PLP chunk length")
		if n == 0 {
			break
		}
		if int64(n) > int64(d.remaining()) {
			d.err = fmt.Errorf("%w: PLP chunk of %d bytes, %d left", errMalformed, n, d.remaining())
			break
		}
		out = append(out, d.take(int(n), "PLP chunk")...)
	}
	return out
}

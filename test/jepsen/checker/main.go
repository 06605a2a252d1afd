// Command checker reads a history of operations on keys (JSON, from a file or stdin) recorded by
// zest's Jepsen-style tests and checks it for linearizability with Porcupine, one register per
// key: reads, plain puts (with or without a lifetime) and deletes, and conditional writes. It
// prints one JSON line: {"result":"ok"|"illegal"|"unknown","operations":N,"keys":K,
// "illegal":[keys],"unknown":[keys]} and exits 0 for ok, 1 for a violation, 2 for bad input or
// a check that timed out.
//
// A put with a lifetime ends at its timestamp plus the lifetime (docs/ttl-and-leases.md); the
// timestamp is taken between the put's call and its answer, so the register keeps the bounds of
// the deadline. A read may show the value only if it began before the latest deadline, and may
// find it gone only if it ended after the earliest one; once a read found it gone, it stays gone
// (an expiry is a delete), which is what "expires once and stays gone" means.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is one recorded operation. Status: "ok" (applied, or read), "fail" (a 412: the condition
// did not hold), "unknown" (no answer, or an error: it may or may not have applied).
type Op struct {
	Client   int    `json:"client"`
	Kind     string `json:"kind"` // read | put | cas | create | cdelete | delete
	Key      string `json:"key"`
	Value    string `json:"value"`  // written value (put, cas, create), or the value read ("" = absent)
	Expect   string `json:"expect"` // the value a cas or cdelete expects
	TTL      int64  `json:"ttl"`    // a put's lifetime in ms, 0 for none
	Status   string `json:"status"`
	Call     int64  `json:"call"`
	Return   int64  `json:"return"`
	Answered bool   `json:"answered"` // false: no answer at all, it may apply at any later time
}

type input struct {
	kind, key, value, expect string
	// A read's call and return (ns); a put's deadline bounds (ns), 0 without a lifetime.
	call, ret, lo, hi int64
}

type output struct {
	status, value string
}

// state is one key: its value ("" absent; written values are never empty) and, for a value with
// a lifetime, the earliest and latest instant its deadline can be (ns since the history began).
type state struct {
	value  string
	lo, hi int64
}

// slack covers the clocks' granularity (the deadline is kept in ms) between the history's
// monotonic clock and the routers' wall clocks on the same host.
const slack = int64(5 * time.Millisecond)

const never = int64(1 << 62)

func step(st interface{}, in interface{}, out interface{}) (bool, interface{}) {
	s := st.(state)
	i := in.(input)
	o := out.(output)
	switch i.kind {
	case "read":
		if o.status != "ok" {
			return true, s
		}
		if o.value == s.value {
			// A value past its latest deadline when the read began has expired: not shown.
			return s.value == "" || s.hi == 0 || i.call <= s.hi+slack, s
		}
		if o.value == "" && s.value != "" && s.hi != 0 && i.ret+slack >= s.lo {
			// Expired: and from now on it stays gone.
			return true, state{}
		}
		return false, s
	case "put":
		return true, state{i.value, i.lo, i.hi}
	case "delete":
		return true, state{}
	}
	// Conditional writes: `holds` is whether the condition holds on s, `next` the state it makes.
	var holds bool
	next := state{value: i.value}
	switch i.kind {
	case "cas":
		holds = s.value != "" && s.value == i.expect
	case "cdelete":
		holds = s.value != "" && s.value == i.expect
		next = state{}
	case "create":
		holds = s.value == ""
	default:
		return false, s
	}
	switch o.status {
	case "ok":
		if holds {
			return true, next
		}
		return false, s
	case "fail":
		return !holds, s
	default: // unknown: it applied if it could (or it is linearized last, where it changes nothing)
		if holds {
			return true, next
		}
		return true, s
	}
}

var model = porcupine.Model{
	Init:  func() interface{} { return state{} },
	Step:  step,
	Equal: func(a, b interface{}) bool { return a.(state) == b.(state) },
	DescribeOperation: func(in interface{}, out interface{}) string {
		i := in.(input)
		o := out.(output)
		ttl := ""
		if i.hi != 0 {
			ttl = fmt.Sprintf(" (deadline %.3f..%.3f s)", float64(i.lo)/1e9, float64(i.hi)/1e9)
		}
		return fmt.Sprintf("%s %s %q (expect %q)%s -> %s %q", i.kind, i.key, i.value, i.expect, ttl, o.status, o.value)
	},
	DescribeState: func(st interface{}) string {
		s := st.(state)
		if s.hi == 0 {
			return fmt.Sprintf("%q", s.value)
		}
		return fmt.Sprintf("%q until %.3f..%.3f s", s.value, float64(s.lo)/1e9, float64(s.hi)/1e9)
	},
}

func main() {
	var r io.Reader = os.Stdin
	if len(os.Args) > 1 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fail(err)
		}
		defer f.Close()
		r = f
	}
	var ops []Op
	if err := json.NewDecoder(r).Decode(&ops); err != nil {
		fail(err)
	}
	total := len(ops)
	ops = prune(ops)
	byKey := map[string][]porcupine.Operation{}
	var order []string
	for _, op := range ops {
		ret := op.Return
		if op.Status == "unknown" {
			// It may take effect at any time after its call.
			ret = never
		}
		in := input{kind: op.Kind, key: op.Key, value: op.Value, expect: op.Expect, call: op.Call, ret: op.Return}
		if op.Kind == "put" && op.TTL > 0 {
			ttl := op.TTL * int64(time.Millisecond)
			in.lo = op.Call + ttl
			in.hi = never
			if op.Answered {
				in.hi = op.Return + ttl
			}
		}
		if _, seen := byKey[op.Key]; !seen {
			order = append(order, op.Key)
		}
		byKey[op.Key] = append(byKey[op.Key], porcupine.Operation{
			ClientId: op.Client,
			Input:    in,
			Call:     op.Call,
			Output:   output{op.Status, op.Value},
			Return:   ret,
		})
	}
	// One check per key, so the verdict names the keys (and so the invariants) that failed.
	illegal := []string{}
	unknown := []string{}
	for _, k := range order {
		result, info := porcupine.CheckOperationsVerbose(model, byKey[k], timeout())
		switch result {
		case porcupine.Illegal:
			illegal = append(illegal, k)
			if len(os.Args) > 2 && len(illegal) == 1 {
				// A picture of the first violation, for a person to read.
				if f, err := os.Create(os.Args[2]); err == nil {
					_ = porcupine.Visualize(model, info, f)
					f.Close()
				}
			}
		case porcupine.Unknown:
			unknown = append(unknown, k)
		}
	}
	name := "ok"
	code := 0
	if len(illegal) > 0 {
		name, code = "illegal", 1
	} else if len(unknown) > 0 {
		name, code = "unknown", 2
	}
	line, _ := json.Marshal(map[string]interface{}{
		"result": name, "operations": total, "keys": len(order), "illegal": illegal, "unknown": unknown,
	})
	fmt.Println(string(line))
	os.Exit(code)
}

// prune leaves out operations that cannot change the verdict, since every unknown operation
// multiplies the orders Porcupine tries: a read that got no answer (legal anywhere, changes
// nothing), and, on a key of plain puts and deletes only, a put that got no answer and whose
// value nobody read (it can always come last; anywhere else it is overwritten unseen).
func prune(ops []Op) []Op {
	conditionalOrTTL := map[string]bool{}
	read := map[string]bool{}
	for _, op := range ops {
		switch {
		case op.Kind == "cas" || op.Kind == "create" || op.Kind == "cdelete" || op.TTL > 0:
			conditionalOrTTL[op.Key] = true
		case op.Kind == "read" && op.Status == "ok":
			read[op.Key+"\x00"+op.Value] = true
		}
	}
	kept := ops[:0:0]
	for _, op := range ops {
		if op.Kind == "read" && op.Status != "ok" {
			continue
		}
		if op.Kind == "put" && op.Status == "unknown" && !conditionalOrTTL[op.Key] && !read[op.Key+"\x00"+op.Value] {
			continue
		}
		kept = append(kept, op)
	}
	return kept
}

// timeout is how long one key's check may take: JEPSEN_CHECK_TIMEOUT_S seconds, 60 by default.
func timeout() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("JEPSEN_CHECK_TIMEOUT_S")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 60 * time.Second
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "checker:", err)
	os.Exit(2)
}

// Command checker reads a history of operations on keys (JSON, from a file or stdin) recorded by
// zest's Jepsen-style tests and checks it for linearizability with Porcupine, one register per
// key. It prints one JSON line: {"result":"ok"|"illegal"|"unknown","operations":N,"keys":K} and
// exits 0 for ok, 1 for a violation, 2 for bad input or a check that timed out.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is one recorded operation. Status: "ok" (applied, or read), "fail" (a 412: the condition
// did not hold), "unknown" (no answer, or an error: it may or may not have applied).
type Op struct {
	Client int    `json:"client"`
	Kind   string `json:"kind"` // read | put | cas | create | cdelete | delete
	Key    string `json:"key"`
	Value  string `json:"value"`  // written value (put, cas, create), or the value read ("" = absent)
	Expect string `json:"expect"` // the value a cas or cdelete expects
	Status string `json:"status"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
}

type input struct {
	kind, key, value, expect string
}

type output struct {
	status, value string
}

// step is the register of one key: "" is absent (values are never empty).
func step(state interface{}, in interface{}, out interface{}) (bool, interface{}) {
	s := state.(string)
	i := in.(input)
	o := out.(output)
	switch i.kind {
	case "read":
		return o.status != "ok" || o.value == s, s
	case "put":
		return true, i.value
	case "delete":
		return true, ""
	}
	// Conditional writes: `holds` is whether the condition holds on s, `next` the state it makes.
	var holds bool
	next := i.value
	switch i.kind {
	case "cas":
		holds = s != "" && s == i.expect
	case "cdelete":
		holds = s != "" && s == i.expect
		next = ""
	case "create":
		holds = s == ""
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
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			k := op.Input.(input).key
			if _, seen := byKey[k]; !seen {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		parts := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init:  func() interface{} { return "" },
	Step:  step,
	Equal: func(a, b interface{}) bool { return a.(string) == b.(string) },
	DescribeOperation: func(in interface{}, out interface{}) string {
		i := in.(input)
		o := out.(output)
		return fmt.Sprintf("%s %s %q (expect %q) -> %s %q", i.kind, i.key, i.value, i.expect, o.status, o.value)
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
	history := make([]porcupine.Operation, 0, len(ops))
	keys := map[string]bool{}
	for _, op := range ops {
		ret := op.Return
		if op.Status == "unknown" {
			// It may take effect at any time after its call.
			ret = 1 << 62
		}
		keys[op.Key] = true
		history = append(history, porcupine.Operation{
			ClientId: op.Client,
			Input:    input{op.Kind, op.Key, op.Value, op.Expect},
			Call:     op.Call,
			Output:   output{op.Status, op.Value},
			Return:   ret,
		})
	}
	result, info := porcupine.CheckOperationsVerbose(model, history, 60*time.Second)
	name := map[porcupine.CheckResult]string{porcupine.Ok: "ok", porcupine.Illegal: "illegal", porcupine.Unknown: "unknown"}[result]
	line, _ := json.Marshal(map[string]interface{}{"result": name, "operations": len(ops), "keys": len(keys)})
	fmt.Println(string(line))
	if result == porcupine.Illegal && len(os.Args) > 2 {
		// A picture of the violation, for a person to read.
		if f, err := os.Create(os.Args[2]); err == nil {
			_ = porcupine.Visualize(model, info, f)
			f.Close()
		}
	}
	switch result {
	case porcupine.Ok:
		os.Exit(0)
	case porcupine.Illegal:
		os.Exit(1)
	default:
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "checker:", err)
	os.Exit(2)
}

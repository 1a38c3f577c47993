// Command flux-envsubst is fluxgate's test oracle for Flux post-build substitution. It links
// the code kustomize-controller v1.9.4 runs (github.com/fluxcd/pkg/kustomize, with
// github.com/fluxcd/pkg/envsubst v1.7.0) and answers one JSON request on stdin with one JSON
// answer on stdout. It is a test tool only: fluxgate never needs Go.
//
// Request: {"mode": "expr", "cases": [{"text", "vars", "strict"}]} evaluates texts the way
// the controller's substitution step does (the same lookup in strict and lax mode); or
// {"mode": "kustomization", "cases": [{"kustomization", "objects", "resources", "strict"}]}
// runs SubstituteVariables over each resource of a Flux Kustomization, reading the
// substituteFrom objects from a fake cluster that holds "objects". With the argument -lines it
// answers expression cases one JSON line at a time, for the fuzz target.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/kustomize"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/kustomize/api/provider"
)

type request struct {
	Mode  string            `json:"mode"`
	Cases []json.RawMessage `json:"cases"`
}

type exprCase struct {
	Text   string            `json:"text"`
	Vars   map[string]string `json:"vars"`
	Strict bool              `json:"strict"`
}

type exprAnswer struct {
	OK  bool   `json:"ok"`
	Out string `json:"out,omitempty"`
	Err string `json:"err,omitempty"`
}

type ksCase struct {
	Kustomization map[string]interface{}   `json:"kustomization"`
	Objects       []json.RawMessage        `json:"objects"`
	Resources     []map[string]interface{} `json:"resources"`
	Strict        bool                     `json:"strict"`
}

type ksAnswer struct {
	OK  bool   `json:"ok"`
	Err string `json:"err,omitempty"`
	// The objects Flux applies, in input order (a disabled resource comes back as it was).
	Resources []json.RawMessage `json:"resources,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-lines" {
		serveLines()
		return
	}
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fail(fmt.Errorf("reading the request: %w", err))
	}
	var answers []interface{}
	started := time.Now()
	for _, raw := range req.Cases {
		switch req.Mode {
		case "expr":
			var c exprCase
			if err := json.Unmarshal(raw, &c); err != nil {
				fail(err)
			}
			answers = append(answers, evalExpr(c))
		case "kustomization":
			var c ksCase
			if err := json.Unmarshal(raw, &c); err != nil {
				fail(err)
			}
			answers = append(answers, substituteKustomization(c))
		default:
			fail(fmt.Errorf("unknown mode %q", req.Mode))
		}
	}
	// The time spent substituting (request decoding and answer encoding left out), for the
	// test's speed comparison.
	fmt.Fprintf(os.Stderr, "elapsed_ns=%d\n", time.Since(started).Nanoseconds())
	if err := json.NewEncoder(os.Stdout).Encode(answers); err != nil {
		fail(err)
	}
}

// serveLines answers one expression case per input line until stdin closes.
func serveLines() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c exprCase
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fail(err)
		}
		if err := out.Encode(evalExpr(c)); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "flux-envsubst:", err)
	os.Exit(2)
}

// evalExpr uses the lookup kustomize's varSubstitution uses: strict reports whether a name
// is defined, lax says every name is (an unset one reads as empty).
func evalExpr(c exprCase) (a exprAnswer) {
	defer func() {
		// A panic in the controller is a failed reconcile (controller-runtime recovers it).
		if r := recover(); r != nil {
			a = exprAnswer{Err: fmt.Sprintf("panic: %v", r)}
		}
	}()
	out, err := envsubst.Eval(c.Text, func(s string) (string, bool) {
		v, ok := c.Vars[s]
		if c.Strict {
			return v, ok
		}
		return v, true
	})
	if err != nil {
		return exprAnswer{Err: err.Error()}
	}
	return exprAnswer{OK: true, Out: out}
}

func substituteKustomization(c ksCase) (a ksAnswer) {
	defer func() {
		if r := recover(); r != nil {
			a = ksAnswer{Err: fmt.Sprintf("panic: %v", r)}
		}
	}()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return ksAnswer{Err: err.Error()}
	}
	var objs []client.Object
	for _, raw := range c.Objects {
		o, err := clusterObject(raw)
		if err != nil {
			return ksAnswer{Err: "oracle input: " + err.Error()}
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	ks := unstructured.Unstructured{Object: c.Kustomization}
	strategy, _, _ := unstructured.NestedString(ks.Object, "spec", "postBuild", "substituteStrategy")
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	out := ksAnswer{OK: true}
	for _, m := range c.Resources {
		res, err := rf.FromMap(m)
		if err != nil {
			return ksAnswer{Err: "oracle input: " + err.Error()}
		}
		if _, err := kustomize.SubstituteVariables(context.Background(), kube, ks, res,
			kustomize.SubstituteWithStrict(c.Strict),
			kustomize.SubstituteWithAlways(strategy == "Always")); err != nil {
			// kustomize-controller stops the build here: nothing of the Kustomization applies.
			return ksAnswer{Err: err.Error()}
		}
		j, err := res.MarshalJSON()
		if err != nil {
			return ksAnswer{Err: err.Error()}
		}
		out.Resources = append(out.Resources, j)
	}
	return out
}

// clusterObject reads a ConfigMap or Secret as the API server would store it (a Secret's
// stringData merged into data); other kinds are not needed by substituteFrom.
func clusterObject(raw json.RawMessage) (client.Object, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	switch head.Kind {
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err := json.Unmarshal(raw, cm); err != nil {
			return nil, err
		}
		return cm, nil
	case "Secret":
		s := &corev1.Secret{}
		if err := json.Unmarshal(raw, s); err != nil {
			return nil, err
		}
		for k, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
		return s, nil
	}
	return nil, nil
}

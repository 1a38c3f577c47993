// The helmfile oracle: helmfile's own command tree (github.com/helmfile/helmfile/cmd) in a
// module of ours, because `go install` refuses a module whose go.mod has replace directives.
// The tests run `build --embed-values` on fixtures (no cluster, no helm repository).
package main

import (
	"fmt"
	"os"

	"github.com/helmfile/helmfile/cmd"
	"github.com/helmfile/helmfile/pkg/config"
)

func main() {
	root, err := cmd.NewRootCmd(new(config.GlobalOptions))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

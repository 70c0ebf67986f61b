package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// crlvetInstall is how to get the analyzer's command.
const crlvetInstall = "go install github.com/crl-go/crl/crlvet/cmd/crlvet@latest"

// vet runs crlvet, the command of the analyzer (package
// github.com/crl-go/crl/crlvet, a module of its own so that the library
// does not require golang.org/x/tools), on the packages args name, with
// its output and exit code: 1 when it finds a place that loses retries, 0
// when it finds none, 2 when the packages cannot be loaded or crlvet is
// not installed. The one flag is the analyzer's -gormall.
func vet(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "-gormall" && !strings.HasPrefix(a, "-gormall=") {
			fmt.Fprintf(stderr, "crl vet: unknown flag %s: expected -gormall or packages such as ./...\n", a)
			return 2
		}
	}
	bin, err := findCrlvet()
	if err != nil {
		fmt.Fprintf(stderr, "crl vet: %v\n", err)
		return 2
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "crl vet: run %s: %v\n", bin, err)
	return 2
}

// findCrlvet returns the crlvet command beside this executable (where go
// install puts both), else the one on PATH.
func findCrlvet() (string, error) {
	if exe, err := os.Executable(); err == nil {
		bin := filepath.Join(filepath.Dir(exe), "crlvet")
		if info, err := os.Stat(bin); err == nil && !info.IsDir() {
			return bin, nil
		}
	}
	bin, err := exec.LookPath("crlvet")
	if err != nil {
		return "", fmt.Errorf("the analyzer's command crlvet is not installed (%s): %w", crlvetInstall, err)
	}
	return bin, nil
}

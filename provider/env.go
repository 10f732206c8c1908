package provider

import "os"

// lookupEnv is os.Getenv; tests of configuration resolution pass their own.
var lookupEnv = os.Getenv

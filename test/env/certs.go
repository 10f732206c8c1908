package env

import "time"

// certValidity is how long the test environment's CAs and client
// certificates (internal/certs issues them) are valid: longer than any run.
const certValidity = 365 * 24 * time.Hour

//go:build race

package rawsock

const raceBuild = true

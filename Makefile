# The two commands of the README:
#
#   make run    build the playground if needed, then run the gateway
#   make test   build the playground if needed, then vet and run every test
#
# `make build` makes the static binary the Dockerfile makes. The Dockerfile
# runs the same commands as the recipes below; TestDockerfileRunsTheMakefile
# keeps them equal.

PLAYGROUND := web/playground
PLAYGROUND_SOURCES := $(PLAYGROUND)/index.html $(PLAYGROUND)/vite.config.js $(PLAYGROUND)/package.json \
	$(wildcard $(PLAYGROUND)/src/*) $(wildcard $(PLAYGROUND)/public/*)

# Flags for `make run`, such as ARGS="-listen :9090".
ARGS ?=

.PHONY: run test build playground

run: playground
	go run . $(ARGS)

test: playground
	go vet ./...
	go test -race -count=1 ./...

build: playground
	go mod download
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o costgw .

playground: $(PLAYGROUND)/dist/index.html

# npm ci installs exactly the lockfile; npm writes node_modules/.package-lock.json
# when it does, so this runs again only when the lockfile changes.
$(PLAYGROUND)/node_modules/.package-lock.json: $(PLAYGROUND)/package-lock.json $(PLAYGROUND)/package.json
	cd $(PLAYGROUND) && npm ci

# The build is embedded in the binary (web/playground/playground.go), so it
# must exist before `go run` or `go build`; it is redone when a source is
# newer than it.
$(PLAYGROUND)/dist/index.html: $(PLAYGROUND)/node_modules/.package-lock.json $(PLAYGROUND_SOURCES)
	cd $(PLAYGROUND) && npm run build

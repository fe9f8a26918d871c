#!/bin/bash
# shellcheck shell=bash
# Tachyon's devstack plugin: Tachyon serves the "placement" service
# (see settings and lib/tachyon).

# shellcheck source=devstack/lib/tachyon
source "$(dirname "${BASH_SOURCE[0]}")/lib/tachyon"

if is_service_enabled tachyon-placement; then
    case "$1 ${2:-}" in
        "stack install")
            echo_summary "Installing Tachyon"
            install_tachyon
            ;;
        "stack post-config")
            # Configured, initialised and started here, before nova's
            # services start and report to it.
            echo_summary "Configuring Tachyon"
            configure_tachyon
            if is_service_enabled keystone; then
                create_tachyon_accounts
            fi
            init_tachyon
            echo_summary "Starting Tachyon"
            start_tachyon
            ;;
    esac
    if [[ "$1" == "unstack" ]]; then
        stop_tachyon
    fi
    if [[ "$1" == "clean" ]]; then
        cleanup_tachyon
    fi
fi

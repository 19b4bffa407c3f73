# Installation layout and the Debian package (CPack DEB): `cpack -G DEB` in a build directory.
# Included at the end of the top-level CMakeLists.txt, after the rdma-healthd target exists.
include(GNUInstallDirs)

set(RDMAHD_PKG_DIR ${CMAKE_CURRENT_SOURCE_DIR}/packaging)
set(RDMAHD_DOC_DIR share/doc/rdma-healthd)
set(RDMAHD_SHARE_DIR share/rdma-healthd)

# install(TARGETS rdma-healthd ...) is next to the target; the rest of the package:
# Debian 12 keeps units in /lib/systemd/system (lintian: systemd-service-file-outside-lib).
install(FILES ${RDMAHD_PKG_DIR}/systemd/rdma-healthd.service DESTINATION /lib/systemd/system)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/config/example.yaml DESTINATION /etc/rdma-healthd
        RENAME config.yaml PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(FILES ${RDMAHD_PKG_DIR}/debian/default DESTINATION /etc/default RENAME rdma-healthd)
install(FILES ${RDMAHD_PKG_DIR}/prometheus/rdma-healthd-alerts.yml
              ${RDMAHD_PKG_DIR}/prometheus/rdma-healthd-alerts_test.yml
        DESTINATION ${RDMAHD_SHARE_DIR}/prometheus)
install(FILES ${RDMAHD_PKG_DIR}/grafana/rdma-healthd-dashboard.json ${RDMAHD_PKG_DIR}/grafana/rdma-healthd-node-dashboard.json
        DESTINATION ${RDMAHD_SHARE_DIR}/grafana)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/README.md
              ${CMAKE_CURRENT_SOURCE_DIR}/docs/checks.md
              ${CMAKE_CURRENT_SOURCE_DIR}/docs/metrics.md
              ${CMAKE_CURRENT_SOURCE_DIR}/docs/configuration.md
              ${RDMAHD_PKG_DIR}/debian/copyright
        DESTINATION ${RDMAHD_DOC_DIR})
# Debian wants the changelog compressed with maximum compression and no timestamp.
set(RDMAHD_CHANGELOG_GZ ${CMAKE_CURRENT_BINARY_DIR}/package/changelog.gz)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/package)
execute_process(COMMAND gzip -9nc ${RDMAHD_PKG_DIR}/debian/changelog
                OUTPUT_FILE ${RDMAHD_CHANGELOG_GZ} COMMAND_ERROR_IS_FATAL ANY)
install(FILES ${RDMAHD_CHANGELOG_GZ} DESTINATION ${RDMAHD_DOC_DIR})
set(RDMAHD_MAN_GZ ${CMAKE_CURRENT_BINARY_DIR}/package/rdma-healthd.8.gz)
execute_process(COMMAND gzip -9nc ${RDMAHD_PKG_DIR}/debian/rdma-healthd.8
                OUTPUT_FILE ${RDMAHD_MAN_GZ} COMMAND_ERROR_IS_FATAL ANY)
install(FILES ${RDMAHD_MAN_GZ} DESTINATION share/man/man8)

# Maintainer scripts and the conffiles list, with the permissions dpkg expects.
set(RDMAHD_CONFFILES ${CMAKE_CURRENT_BINARY_DIR}/package/conffiles)
file(WRITE ${RDMAHD_CONFFILES} "/etc/default/rdma-healthd\n/etc/rdma-healthd/config.yaml\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rdma-healthd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "RDMA/RoCE node health checks and Prometheus metrics")
set(CPACK_PACKAGE_DESCRIPTION
"rdma-healthd reads what the kernel knows about every RDMA device (port state,
rate, GIDs, firmware, counters) and the RoCE lossless-fabric settings (PFC,
ECN, trust mode, pause counters, MTU), turns those facts into verdicts with a
reason and a fix, and exports everything as Prometheus metrics. The package
ships the daemon with its systemd unit, Prometheus alert rules and a Grafana
dashboard.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "rdma-healthd developers <rdma-healthd@example.org>")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libarchive13 writes and reads the support bundle (`rdma-healthd capture`); shlibdeps finds it too.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, init-system-helpers (>= 1.52), libarchive13")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "rdma-core, ibverbs-providers")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${RDMAHD_PKG_DIR}/debian/postinst ${RDMAHD_PKG_DIR}/debian/prerm ${RDMAHD_PKG_DIR}/debian/postrm
    ${RDMAHD_CONFFILES})
include(CPack)

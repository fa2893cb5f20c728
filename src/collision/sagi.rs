//! SAGI: semi-analytic geometry iteration for ellipsoid contacts (paper 002, section 3
//! and Appendix A). OWNER: SAGI helper.
